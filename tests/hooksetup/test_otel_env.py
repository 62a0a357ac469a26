"""`ingestd hooks install --otel`: the env block that sends Claude Code's telemetry to the daemon,
written beside the user's own entries and removed, exactly, by uninstall."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ingestd.claude import hooksetup
from ingestd.cli import cli


def run(home: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["hooks", *args], env={"HOME": str(home)}, catch_exceptions=False)


def settings(home: Path) -> dict[str, Any]:
    return json.loads((home / ".claude" / "settings.json").read_text())


def _home(tmp_path: Path, doc: dict[str, Any]) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(doc, indent=2) + "\n")
    return home


def test_install_otel_adds_the_env_and_uninstall_removes_only_ours(tmp_path: Path) -> None:
    home = _home(tmp_path, {"env": {"MY_VAR": "x", "CLAUDE_CODE_ENABLE_TELEMETRY": "1"}, "model": "opus"})
    r = run(home, "install", "--otel", "--port", "7391", "--host", "127.0.0.1")
    assert r.exit_code == 0, r.output
    env = settings(home)["env"]
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:7391"
    assert env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"
    assert env["OTEL_LOGS_EXPORTER"] == env["OTEL_METRICS_EXPORTER"] == "otlp"
    assert env["MY_VAR"] == "x"
    # the user's own CLAUDE_CODE_ENABLE_TELEMETRY is not listed as ours
    assert "CLAUDE_CODE_ENABLE_TELEMETRY" not in env[hooksetup.OTEL_MARK].split(",")
    again = run(home, "install", "--otel", "--port", "7391", "--host", "127.0.0.1")
    assert again.exit_code == 0 and "already up to date" in again.output
    r = run(home, "uninstall")
    assert r.exit_code == 0, r.output
    assert settings(home) == {"env": {"MY_VAR": "x", "CLAUDE_CODE_ENABLE_TELEMETRY": "1"}, "model": "opus"}


def test_a_port_change_moves_our_endpoint(tmp_path: Path) -> None:
    home = _home(tmp_path, {})
    assert run(home, "install", "--otel", "--port", "7391", "--host", "127.0.0.1").exit_code == 0
    assert run(home, "install", "--otel", "--port", "7400", "--host", "127.0.0.1").exit_code == 0
    assert settings(home)["env"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:7400"
    # installing without --otel takes ours away (install writes what it is asked for)
    assert run(home, "install", "--port", "7400", "--host", "127.0.0.1").exit_code == 0
    assert "env" not in settings(home)


def test_the_users_own_exporter_is_never_overwritten(tmp_path: Path) -> None:
    doc = {"env": {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector.example:4318"}}
    home = _home(tmp_path, doc)
    before = (home / ".claude" / "settings.json").read_text()
    r = CliRunner().invoke(
        cli, ["hooks", "install", "--otel", "--port", "7391", "--host", "127.0.0.1"], env={"HOME": str(home)}
    )
    assert r.exit_code == 2 and "OTEL_EXPORTER_OTLP_ENDPOINT" in r.output and "nothing was changed" in r.output
    assert (home / ".claude" / "settings.json").read_text() == before
