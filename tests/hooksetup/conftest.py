"""Fixtures shared by the hooks tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_claude_config_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The user's settings are ``$HOME/.claude/settings.json`` in these tests, whatever the shell has;
    the default database is a fresh path, so a daemon the user runs is not taken for the test's."""
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("INGESTD_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
