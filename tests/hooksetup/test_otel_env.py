"""`ingestd hooks install --otel`: the env block that sends Claude Code's telemetry to the daemon,
written beside the user's own entries and removed, exactly, by uninstall."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
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


# settings.json as people leave them: Claude Code's own two-space layout with its usual keys, a
# hand-edited file (odd spacing, a tab, one-line objects, keys in no particular order, their own
# hooks and env), one line with no final newline, CRLF line ends, four-space indent.
SHAPES = {
    "claude_layout": json.dumps(
        {
            "$schema": "https://json.schemastore.org/claude-code-settings.json",
            "model": "opus",
            "permissions": {"allow": ["Bash(npm run test:*)", "Read(~/.zshrc)"], "deny": ["Read(./.env)"]},
            "feedbackSurveyState": {"lastShownTime": 1754089004345},
            "alwaysThinkingEnabled": True,
        },
        indent=2,
    )
    + "\n",
    "hand_edited": (
        '{\n    "model" :  "opus",\n  "permissions": {"allow": ["Bash(ls:*)", "Read"],   "deny": []},\n'
        '\t"env": {"MY_VAR": "x",   "CLAUDE_CODE_ENABLE_TELEMETRY":"1"},\n  "hooks": {\n'
        '    "Stop": [ { "hooks": [ {"type": "command", "command": "say done"} ] } ]\n  },\n'
        '  "statusLine": {"type":"command","command":"~/bin/sl", "padding": 0},\n  "cleanupPeriodDays": 1e3\n}\n'
    ),
    "one_line": '{"theme":"dark","env":{"FOO":"bar"},"model":"sonnet"}',
    "crlf": (
        '{\r\n  "includeCoAuthoredBy": false,\r\n  "env": {\r\n      "FOO": "bar"\r\n  },\r\n'
        '  "model": "sonnet"\r\n}\r\n'
    ),
    "empty_env": '{\n  "env": {},\n  "model": "opus"\n}\n',
    "four_spaces": (
        '{\n    "hooks": {\n        "PreToolUse": [\n            {"matcher": "Bash", "hooks": [{"type": "command",'
        ' "command": "check.sh"}]}\n        ]\n    },\n    "env": {\n        "A": "1"\n    }\n}\n'
    ),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_uninstall_gives_back_the_file_install_otel_found_byte_for_byte(tmp_path: Path, shape: str) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    path = home / ".claude" / "settings.json"
    original = SHAPES[shape].encode()
    path.write_bytes(original)
    r = run(home, "install", "--otel", "--port", "7391", "--host", "127.0.0.1")
    assert r.exit_code == 0, r.output
    installed = json.loads(path.read_bytes())
    assert installed["env"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:7391" and installed["hooks"]["Stop"]
    r = run(home, "uninstall")
    assert r.exit_code == 0, r.output
    assert path.read_bytes() == original
