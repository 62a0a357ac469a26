"""The Claude Code plugin shipped with ingestd, and the rule that it and ``hooks install`` never both
deliver (docs/claude-code.md §3 has Claude Code's plugin format).

The plugin directory is ``ingestd/claude/plugin/`` (package data): ``.claude-plugin/plugin.json``
(the manifest), ``hooks/hooks.json`` and a README. Its hooks are ``hooksetup.our_hooks`` for the
default address (``http://127.0.0.1:7391/hooks``, no token): http hooks on every event
``hooks install`` hooks with http, marked ``X-Ingestd-Hook: PLUGIN_MARK``; on SessionStart and
Setup, which take only command hooks, the forwarder ``ingestd-forward`` (the console script of
``ingestd.forward``, found on ``PATH`` as Claude Code runs commands through the shell). The shipped
``hooks.json`` is what ``render_hooks`` gives for that address (a test keeps them equal).

``ingestd plugin path`` prints the directory (a marketplace entry's ``command`` source runs it,
the repository's ``.claude-plugin/marketplace.json``): the shipped one for the default address,
else a copy written with the daemon's address (``write_dir``).

Never both: a hook in settings and the plugin's deliver each event twice, and events without a
natural identity (Stop, UserPromptSubmit, ...) would then be two log rows (``core.hookkeys`` rule 3).
``hooks install`` refuses while the plugin is enabled (``enabled_in``: Claude Code's settings key
``enabledPlugins``, ``"ingestd@<marketplace>": true``), and ``plugin path`` refuses while
``hooks install``'s hooks are in the user's settings.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from ingestd import files
from ingestd.claude import hooksetup
from ingestd.errors import ConfigError
from ingestd.settings import DEFAULTS

NAME = "ingestd"
SHIPPED = Path(__file__).resolve().parent / "plugin"
MANIFEST = Path(".claude-plugin") / "plugin.json"
HOOKS = Path("hooks") / "hooks.json"
FORWARDER = "ingestd-forward"
PLUGIN_MARK = "sent by the ingestd plugin"
DESCRIPTION = "Every Claude Code hook event to the local ingestd daemon, over http (no process per event)."
DEFAULT_TARGET = hooksetup.HookTarget(port=DEFAULTS.get_int("port"))


def forward_command(t: hooksetup.HookTarget) -> str:
    """The plugin's command-hook line: ``ingestd-forward --url URL --timeout-s 2 [--token-env NAME]``. Pure."""
    parts = [FORWARDER, "--url", t.url, "--timeout-s", str(hooksetup.FORWARD_TIMEOUT_S)]
    if t.token_env:
        parts += ["--token-env", t.token_env]
    return " ".join(shlex.quote(p) for p in parts)


def hooks_document(t: hooksetup.HookTarget) -> dict[str, Any]:
    """``hooks/hooks.json`` for a daemon at ``t``: ``{"description", "hooks": {event: [groups]}}``. Pure."""
    return {
        "description": DESCRIPTION,
        "hooks": hooksetup.our_hooks(t, mark=PLUGIN_MARK, command=forward_command(t)),
    }


def render_hooks(t: hooksetup.HookTarget) -> str:
    """``hooks_document(t)`` as the file's text (two-space indent, final newline). Pure."""
    return json.dumps(hooks_document(t), indent=2, ensure_ascii=False) + "\n"


def is_default(t: hooksetup.HookTarget) -> bool:
    """The shipped directory serves ``t``: the default address, no token."""
    return (t.host, t.port, t.token_env) == (DEFAULT_TARGET.host, DEFAULT_TARGET.port, None)


def _own_dir(path: Path) -> None:
    """Make ``path`` (0755), or check the one there: a real directory of the user's that no one
    else can write. The plugin's ``hooks.json`` names the commands Claude Code runs, so a folder
    another user made (beside a database in ``/tmp``), or a symlink to one, must not hold it.

    Raises:
        ConfigError: a symlink, not a directory, another user's, or writable by group or others.
    """
    if path.is_symlink():
        raise ConfigError(
            f"{path} is a symlink: the plugin's hooks name the commands Claude Code runs, so they are"
            f" written only into a folder of your own; fix: rm {shlex.quote(str(path))}",
            path=str(path),
        )
    path.mkdir(mode=0o755, exist_ok=True)
    files.require_safe(files.file_problems(path, directory=True))


def write_dir(t: hooksetup.HookTarget, dest: Path) -> Path:
    """The plugin for a daemon at ``t``, written at ``dest`` (the shipped files, ``hooks.json``
    rendered for ``t``); returns ``dest``. Replaces what an earlier call wrote there (each file
    atomically, 0644: Claude Code copies it into its plugin cache).

    Raises:
        ConfigError: ``dest`` or a folder in it is a symlink or a folder others can change (``_own_dir``).
    """
    dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _own_dir(dest)
    for rel in (MANIFEST, HOOKS, Path("README.md")):
        if rel.parent != Path("."):
            _own_dir(dest / rel.parent)
        text = render_hooks(t) if rel == HOOKS else (SHIPPED / rel).read_text()
        files.replace(dest / rel, text, 0o644)
    return dest


def enabled_in(settings: dict[str, Any]) -> list[str]:
    """The ids of the ingestd plugin enabled in one Claude Code settings object
    (``enabledPlugins: {"ingestd@<marketplace>": true}``), sorted. Pure."""
    enabled = settings.get("enabledPlugins")
    if not isinstance(enabled, dict):
        return []
    return sorted(k for k, v in enabled.items() if isinstance(k, str) and k.split("@", 1)[0] == NAME and v is True)


def hooks_installed_in(settings: dict[str, Any]) -> bool:
    """``hooks install``'s hooks are in this settings object (``hooksetup.ours_in``). Pure."""
    is_ours = hooksetup.ours_in(settings)
    return any(is_ours(h) for h in hooksetup.hooks_of(settings))
