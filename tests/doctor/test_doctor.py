"""``ingestd doctor``: each check as a user meets it (a real settings tree, a real database, a
health server standing in for the daemon), and the pure rules behind them."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd.claude import doctor
from ingestd.cli import cli
from ingestd.daemon import presence

SID = "4d5611aa-0000-4000-8000-000000000001"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home"
    (h / ".claude" / "projects").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(h)
    monkeypatch.setattr(doctor, "MANAGED_SETTINGS", {})
    return h


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def daemon(home: Path, tmp_path: Path) -> Iterator[int]:
    """A health server on a free port, recorded as the daemon of the default database."""
    srv = HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    db = tmp_path / "xdg" / "ingestd" / "ingestd.db"
    db.parent.mkdir(parents=True)
    port = srv.server_address[1]
    presence.write_started(db, host="127.0.0.1", port=port, now=datetime.now(UTC))
    try:
        yield port
    finally:
        srv.shutdown()
        srv.server_close()


def run(*args: str) -> tuple[int, dict[str, Any]]:
    r = CliRunner().invoke(cli, ["doctor", "--json", *args])
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.stdout)


def levels(doc: dict[str, Any], check: str) -> list[tuple[str, str]]:
    return [(f["level"], f["message"]) for f in doc["findings"] if f["check"] == check]


def test_nothing_set_up_needs_action_for_the_daemon_and_the_hooks(home: Path) -> None:
    code, doc = run()
    assert code == 1 and doc["action_needed"] is True
    assert levels(doc, "daemon")[0][0] == "action"
    ((level, message),) = levels(doc, "hooks")
    assert level == "action" and "no ingestd hooks are installed" in message
    assert levels(doc, "migrations")[0][0] == "note"  # no database yet


def test_a_set_up_machine_is_all_ok_and_exits_0(home: Path, daemon: int) -> None:
    r = CliRunner().invoke(cli, ["hooks", "install"])
    assert r.exit_code == 0, r.output
    settings = home / ".claude" / "settings.json"
    doc = json.loads(settings.read_text())
    doc["statusLine"] = {"type": "command", "command": "ingestd statusline"}
    settings.write_text(json.dumps(doc))
    code, got = run()
    assert [f for f in got["findings"] if f["level"] != "ok" and f["check"] != "migrations"] == []
    assert code == 0 or levels(got, "migrations")[0][0] == "action"


def test_hooks_pointing_at_another_port_than_the_daemon_need_action(home: Path, daemon: int) -> None:
    assert CliRunner().invoke(cli, ["hooks", "install", "--port", "1"]).exit_code == 0
    _, doc = run()
    assert any(
        level == "action" and f"but the daemon listens on http://127.0.0.1:{daemon}/hooks" in m
        for level, m in levels(doc, "hooks")
    )


def test_hooks_and_the_plugin_together_are_doubled(home: Path) -> None:
    assert CliRunner().invoke(cli, ["hooks", "install", "--port", "7391"]).exit_code == 0
    project = home / ".claude" / "settings.local.json"
    project.parent.mkdir(exist_ok=True)
    (home / ".claude" / "settings.local.json").write_text(json.dumps({"enabledPlugins": {"ingestd@ingestd": True}}))
    _, doc = run()
    assert any("every event arrives twice" in m for _, m in levels(doc, "hooks"))


def test_an_outdated_install_names_the_missing_events(home: Path) -> None:
    assert CliRunner().invoke(cli, ["hooks", "install", "--port", "7391"]).exit_code == 0
    settings = home / ".claude" / "settings.json"
    doc = json.loads(settings.read_text())
    del doc["hooks"]["Stop"]
    settings.write_text(json.dumps(doc))
    _, got = run()
    assert any("(missing: Stop)" in m for _, m in levels(got, "hooks"))


def test_managed_settings_that_stop_http_hooks_are_named(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    base = tmp_path / "managed"
    (base / "managed-settings.d").mkdir(parents=True)
    (base / "managed-settings.json").write_text(json.dumps({"allowedHttpHookUrls": ["https://hooks.example.com/*"]}))
    (base / "managed-settings.d" / "10-lock.json").write_text(
        json.dumps({"allowManagedHooksOnly": True, "cleanupPeriodDays": 7})
    )
    monkeypatch.setattr(doctor, "platform_managed_base", lambda: base)
    _, doc = run()
    got = levels(doc, "managed_settings")
    assert [lvl for lvl, _ in got] == ["action", "action"]
    assert "allowedHttpHookUrls does not allow http://127.0.0.1:7391/hooks" in got[0][1]
    assert "allowManagedHooksOnly" in got[1][1]
    assert "cleanupPeriodDays 7 (" in levels(doc, "cleanup")[0][1]


def test_old_transcripts_not_in_the_log_need_an_ingest_and_then_are_fine(home: Path, tmp_path: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-user-p"
    proj.mkdir()
    old = proj / f"{SID}.jsonl"
    rec = {"type": "user", "sessionId": SID, "uuid": "u1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
    old.write_text(json.dumps(rec) + "\n")
    past = time.time() - 40 * 86400
    os.utime(old, (past, past))
    (proj / "new.jsonl").write_text(json.dumps({**rec, "uuid": "u2"}) + "\n")
    _, doc = run()
    ((level, message),) = levels(doc, "cleanup")
    assert level == "action"
    assert "1 transcripts are older" in message and f"-home-user-p/{SID}.jsonl" in message
    assert CliRunner().invoke(cli, ["ingest"]).exit_code == 0
    _, doc = run()
    ((level, message),) = levels(doc, "cleanup")
    assert level == "ok" and "every one is in the log" in message


def test_an_unreadable_projects_root_needs_action(home: Path, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every directory")
    root = tmp_path / "locked"
    root.mkdir()
    root.chmod(0)
    try:
        _, doc = run("--projects", str(root))
        assert levels(doc, "projects")[0][0] == "action"
    finally:
        root.chmod(0o700)


def test_the_terminal_shows_one_line_per_finding_and_what_to_do(home: Path) -> None:
    r = CliRunner().invoke(cli, ["doctor"])
    assert r.exit_code == 1
    assert "fix   daemon" in r.output
    assert "-> ingestd hooks install" in r.output


@pytest.mark.parametrize(
    ("url", "patterns", "allowed"),
    [
        ("http://127.0.0.1:7391/hooks", ["http://127.0.0.1:*"], True),
        ("http://127.0.0.1:7391/hooks", ["http://localhost:*/hooks"], False),
        ("http://127.0.0.1:7391/hooks", ["*"], True),
        ("http://127.0.0.1:7391/hooks", [], False),
        ("http://127.0.0.1:7391/hooks", ["http://127.0.0.1:7391/hook?"], False),
    ],
)
def test_allowed_http_hook_url_patterns(url: str, patterns: list[str], allowed: bool) -> None:
    assert doctor.url_allowed(url, patterns) is allowed


def test_cleanup_zero_keeps_nothing_and_needs_action() -> None:
    f = doctor.cleanup_finding(0, Path("/s.json"), 0, [])
    assert f.level == "action" and "keeps no transcripts" in f.message


def test_a_nearly_full_disk_needs_action() -> None:
    assert doctor.disk_finding(Path("/d.db"), 10 << 20, 5 << 20, 100 << 30).level == "action"
    assert doctor.disk_finding(Path("/d.db"), 10 << 20, 4 << 30, 100 << 30).level == "action"
    assert doctor.disk_finding(Path("/d.db"), 10 << 20, 50 << 30, 100 << 30).level == "ok"


def test_a_projects_root_that_cannot_be_listed_needs_action(home: Path, tmp_path: Path) -> None:
    root = tmp_path / "not-a-dir"
    root.write_text("")
    code, doc = run("--projects", str(root))
    assert code == 1
    ((level, message),) = levels(doc, "projects")
    assert level == "action" and f"{root} cannot be read" in message
