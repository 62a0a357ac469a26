"""Claude Code's config directory is found by one rule (``paths.claude_config_dir``), read by
``ingest`` / ``serve`` / ``service`` (its ``projects``) and ``hooks`` (its ``settings.json``) alike."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ingestd
from ingestd.claude.paths import claude_config_dir
from ingestd.commands._common import default_projects
from ingestd.commands.hooks import _path


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}, "/c"),
        ({"HOME": "/h", "CLAUDE_CONFIG_DIR": ""}, "/h/.claude"),  # empty: unset
        ({"HOME": "/h"}, "/h/.claude"),
    ],
)
def test_the_rule_and_its_readers_agree(env: dict[str, str], want: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert claude_config_dir(env) == Path(want)
    assert default_projects(env) == [Path(want) / "projects"]
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert _path(None) == Path(want) / "settings.json"


def test_only_the_rule_reads_the_variable() -> None:
    # it was written out three times (default_projects, hooks, hooksetup)
    root = Path(ingestd.__file__).parent
    readers = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*.py")
        if re.search(r"""(get|environ)\(\s*["']CLAUDE_CONFIG_DIR["']""", p.read_text())
    }
    assert readers == {"claude/paths.py"}
