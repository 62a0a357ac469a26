"""Where Claude Code keeps its configuration directory (``~/.claude``), as Claude Code finds it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def claude_config_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's config directory: ``$CLAUDE_CONFIG_DIR`` when set and not empty (it moves the
    whole of ``~/.claude``: ``projects/`` and ``settings.json`` alike), else ``$HOME/.claude`` (the
    user's home directory when ``HOME`` is unset or empty). Reads only ``env`` (and, without
    ``HOME``, the password database); touches no file.

    Args:
        env: the environment (``os.environ`` or a test's mapping).
    """
    base = env.get("CLAUDE_CONFIG_DIR")
    if base:
        return Path(base)
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".claude"
