"""Only the hooks ingestd wrote are ingestd's (``ingestd.claude.hooksetup``): a hook the user wrote by hand
to the daemon's own URL survives install / uninstall round trips; an older install is upgraded."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd.claude import hooksetup
from ingestd.cli import cli

MARK = dict([hooksetup.INSTALLED_BY])

# Hooks a user writes by hand to the daemon's own endpoint: not marked, so not ours
USERS_OWN: list[dict[str, Any]] = [
    {"type": "http", "url": "http://127.0.0.1:7391/hooks"},
    {"type": "http", "url": "http://127.0.0.1:7391/hooks", "timeout": 30},
    {"type": "http", "url": "http://localhost:7391/hook", "timeout": 5},
    {"type": "http", "url": "http://127.0.0.1:7391/hooks", "timeout": 5, "headers": {"X-Mine": "1"}},
    # the exact shape older installs wrote, in a file no install ever touched
    {"type": "http", "url": "http://127.0.0.1:7391/hooks", "timeout": 5},
    {"type": "command", "command": "echo see ingestd.forward in the docs"},
]


def run(home: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, ["hooks", *args], env={"HOME": str(home), **(env or {})}, catch_exceptions=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".claude").mkdir(parents=True)
    return h


@pytest.mark.parametrize("own", USERS_OWN, ids=["bare", "timeout-30", "alias", "own-header", "old-shape", "prose"])
def test_a_users_hook_at_the_daemons_url_survives_install_and_uninstall(home: Path, own: dict[str, Any]) -> None:
    # Regression: adopted as ours by its URL, so `uninstall` deleted the user's own hook
    path = home / ".claude" / "settings.json"
    original = json.dumps({"hooks": {"Stop": [{"hooks": [own]}], "PreToolUse": [{"hooks": [own]}]}}, indent=2) + "\n"
    path.write_text(original)
    for _ in range(2):  # the second install changes nothing, and keeps the user's hook too
        assert run(home, "install").exit_code == 0
        stop = [h for g in json.loads(path.read_text())["hooks"]["Stop"] for h in g["hooks"]]
        assert stop[0] == own and [hooksetup.is_ours(h) for h in stop] == [False, True]
    assert run(home, "uninstall").exit_code == 0
    assert path.read_text() == original


def _older_install(own: dict[str, Any]) -> dict[str, Any]:
    """What an install before the mark wrote beside the user's hooks: unmarked http hooks, forwarders."""
    fwd = f"{shlex.quote(sys.executable)} -m ingestd.forward --url http://127.0.0.1:7391/hooks --timeout-s 2"
    old_http = {"type": "http", "url": "http://127.0.0.1:7391/hooks", "timeout": 5}
    hooks: dict[str, Any] = {"Stop": [{"hooks": [own]}]}
    for ev in hooksetup.HTTP_EVENTS:
        group: dict[str, Any] = {"matcher": "*"} if ev in hooksetup.TOOL_MATCHER_EVENTS else {}
        hooks.setdefault(ev, []).append({**group, "hooks": [old_http]})
    for ev in hooksetup.COMMAND_ONLY_EVENTS:
        hooks[ev] = [{"hooks": [{"type": "command", "command": fwd, "async": True, "timeout": 5}]}]
    return {"model": "opus", "hooks": hooks}


def test_an_older_install_is_replaced_not_doubled_and_uninstalled(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    own = {"type": "command", "command": "say done"}
    path.write_text(json.dumps(_older_install(own), indent=2) + "\n")
    assert run(home, "install").exit_code == 0
    doc = json.loads(path.read_text())
    for ev in (*hooksetup.HTTP_EVENTS, *hooksetup.COMMAND_ONLY_EVENTS):
        hooks = [h for g in doc["hooks"][ev] for h in g["hooks"]]
        ours = [h for h in hooks if hooksetup.is_ours(h)]
        assert len(ours) == 1 and len(hooks) == len(ours) + (ev == "Stop"), (
            ev
        )  # one each: a Stop posted twice is two rows
    assert run(home, "uninstall").exit_code == 0
    assert json.loads(path.read_text()) == {"model": "opus", "hooks": {"Stop": [{"hooks": [own]}]}}


def test_the_marks_are_exact() -> None:
    fwd = {"type": "command", "command": "/usr/bin/python3 -m ingestd.forward --url http://x/hooks"}
    assert hooksetup.is_ours(fwd)
    assert not hooksetup.is_ours({"type": "command", "command": "/usr/bin/python3 -m ingestd.forwarder"})
    assert not hooksetup.is_ours({"type": "command", "command": "unbalanced 'quote -m ingestd.forward"})
    assert hooksetup.is_ours({"type": "http", "url": "http://10.1.2.3:7391/hooks", "headers": MARK})
    assert not hooksetup.is_ours(
        {"type": "http", "url": "http://10.1.2.3:7391/hooks", "headers": {"X-Ingestd-Hook": ""}}
    )
    older = hooksetup.ours_in(_older_install({"type": "command", "command": "say done"}))
    token = {"headers": {"Authorization": "Bearer ${T}"}, "allowedEnvVars": ["T"]}
    assert older({"type": "http", "url": "http://[::1]:9000/hooks", "timeout": 5, **token})
    assert not older({"type": "http", "url": "http://127.0.0.1:9000/hooks", "timeout": 5, "headers": {"A": "b"}})
    assert not older({"type": "http", "url": "http://127.0.0.1:9000/hooks?x=1", "timeout": 5})
