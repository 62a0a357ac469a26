"""Fixtures shared by the hooks tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_claude_config_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's settings are ``$HOME/.claude/settings.json`` in these tests, whatever the shell has."""
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
