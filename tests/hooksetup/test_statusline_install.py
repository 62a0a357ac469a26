"""`ingestd statusline install | uninstall` on real settings files: a user's status line is never
replaced silently."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd import statusclient
from ingestd.claude import statuslinesetup
from ingestd.cli import cli

THEIRS = {"type": "command", "command": "npx -y ccstatusline@latest", "padding": 0}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".claude").mkdir(parents=True)
    return h


def run(home: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["statusline", *args], env={"HOME": str(home)}, catch_exceptions=False)


def settings(home: Path) -> dict[str, Any]:
    return json.loads((home / ".claude" / "settings.json").read_text())


def backups(home: Path) -> list[Path]:
    return sorted((home / ".claude").glob("settings.json.bak-*"))


def test_install_into_no_settings_then_idempotent_then_uninstall(home: Path) -> None:
    r = run(home, "install", "--port", "7400")
    assert r.exit_code == 0, r.output
    line = settings(home)["statusLine"]
    assert line["type"] == "command" and line["padding"] == 0 and statuslinesetup.is_ours(line)
    words = shlex.split(line["command"])
    assert words[1:3] == ["-I", "-S"] and Path(words[3]) == Path(statusclient.__file__).resolve()
    assert words[4:] == ["--url", "http://127.0.0.1:7400/statusline"]
    assert backups(home) == []
    again = run(home, "install", "--port", "7400")
    assert again.exit_code == 0 and "already up to date" in again.output
    assert run(home, "uninstall").exit_code == 0
    assert "statusLine" not in settings(home)


def test_a_users_status_line_is_refused_then_replaced_with_a_backup(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    original = json.dumps({"model": "opus", "statusLine": THEIRS}, indent=2) + "\n"
    path.write_text(original)
    refused = run(home, "install")
    assert refused.exit_code == 2
    assert "already has a status line ('npx -y ccstatusline@latest')" in refused.output
    assert "--replace" in refused.output
    assert path.read_text() == original and backups(home) == []
    dry = run(home, "install", "--replace", "--dry-run")
    assert dry.exit_code == 0 and '-    "command": "npx -y ccstatusline@latest"' in dry.output
    assert path.read_text() == original
    replaced = run(home, "install", "--replace")
    assert replaced.exit_code == 0 and "old file saved as" in replaced.output
    [bak] = backups(home)
    assert bak.read_text() == original
    doc = settings(home)
    assert doc["model"] == "opus" and statuslinesetup.is_ours(doc["statusLine"])
    # ours again on another port: replaced without --replace (it is ours)
    assert run(home, "install", "--port", "7401").exit_code == 0
    assert settings(home)["statusLine"]["command"].endswith("http://127.0.0.1:7401/statusline")


def test_uninstall_leaves_a_users_status_line_alone(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text(json.dumps({"statusLine": THEIRS}))
    before = path.read_text()
    r = run(home, "uninstall")
    assert r.exit_code == 0 and "nothing to do" in r.output and path.read_text() == before


def test_token_and_fields_go_by_name() -> None:
    t = statuslinesetup.StatusTarget("/py", "/x/ingestd/statusclient.py", "http://h:1/statusline", "TOK", "limits")
    assert statuslinesetup.command(t) == (
        "/py -I -S /x/ingestd/statusclient.py --url http://h:1/statusline --token-env TOK --fields limits"
    )
    assert not statuslinesetup.is_ours({"command": "/x/other/statusclient.py"})
    assert not statuslinesetup.is_ours({"command": "'unbalanced"})


def test_the_command_itself_prints_a_line_and_exits_0_without_a_daemon(home: Path) -> None:
    from tests.support import free_port

    r = CliRunner().invoke(
        cli, ["statusline", "--port", str(free_port())], input=b'{"session_id": "s"}', env={"HOME": str(home)}
    )
    assert r.exit_code == 0 and r.stdout == "ingestd off\n"
