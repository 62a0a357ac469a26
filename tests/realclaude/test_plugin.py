"""The ingestd plugin against a real Claude Code 2.1.332: ``claude plugin validate`` accepts the
shipped plugin, a copy for another port and the repository's marketplace; installed through that
marketplace (its ``command`` source runs ``ingestd plugin path``), the plugin delivers a session's
events to a running daemon, each once, SessionStart through its command forwarder included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import apsw

from ingestd.claude import hooksetup, pluginsetup
from tests.realclaude import standin as s
from tests.realclaude.claude import Claude
from tests.reliability.daemon import Daemon
from tests.support import free_port, wait_for

REPO = Path(__file__).resolve().parents[2]
INSTALLED = set(hooksetup.HTTP_EVENTS) | set(hooksetup.COMMAND_ONLY_EVENTS)


def claude_cli(claude: Claude, home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``claude ARGS`` (a subcommand, not a prompt) in ``home`` with ``env`` added."""
    return subprocess.run(
        [str(claude.exe), *args], cwd=home, env=claude.env(home, env), capture_output=True, text=True, timeout=120
    )


def validate(claude: Claude, tmp_path: Path, target: Path) -> dict[str, Any]:
    home = claude.home()
    r = claude_cli(claude, home, {}, "plugin", "validate", str(target), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    return dict(json.loads(r.stdout))


def test_claude_plugin_validate_accepts_the_shipped_plugin_with_every_event(claude: Claude, tmp_path: Path) -> None:
    got = validate(claude, tmp_path, pluginsetup.SHIPPED)
    assert got["success"] is True
    assert got["manifest"]["errors"] == []
    assert all(c["errors"] == [] and c["warnings"] == [] for c in got["contents"])
    provides = {h["event"]: h for h in got["provides"]["hooks"]}
    assert set(provides) == INSTALLED
    for event, hook in provides.items():
        want = "command" if event in hooksetup.COMMAND_ONLY_EVENTS else "http"
        assert hook["type"] == want, event


def test_claude_plugin_validate_accepts_a_copy_for_another_port_and_the_marketplace(
    claude: Claude, tmp_path: Path
) -> None:
    target = hooksetup.HookTarget(port=45999, token_env="TOK")
    copy = pluginsetup.write_dir(target, tmp_path / "copy")
    got = validate(claude, tmp_path, copy)
    assert {h.get("url") for h in got["provides"]["hooks"]} == {None, "http://127.0.0.1:45999/hooks"}
    market = validate(claude, tmp_path, REPO)
    assert market["success"] is True


def hook_rows(db: Path, sid: str) -> Counter[str]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute("SELECT event_type FROM events_raw WHERE source = 'hook' AND session_id = ?", (sid,))
        return Counter(r[0] for r in rows)
    finally:
        conn.close()


def test_a_real_claude_code_with_the_plugin_installed_delivers_its_events_once(
    claude: Claude, standin: s.StandIn, tmp_path: Path
) -> None:
    home = claude.home()
    (home / ".claude" / "projects").mkdir()
    hello = home / "proj" / "hello.txt"
    hello.write_text("hello\n")
    daemon = Daemon(tmp_path / "ingestd.db", home / ".claude" / "projects", free_port(), tmp_path / "serve.log")
    # `ingestd plugin path` (the marketplace's command) and the forwarder run from this PATH
    bin_dir = str(Path(sys.executable).parent)
    env = {
        "PATH": os.pathsep.join([bin_dir, str(claude.exe.parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "INGESTD_PORT": str(daemon.port),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
    }
    added = claude_cli(claude, home, env, "plugin", "marketplace", "add", str(REPO))
    assert added.returncode == 0, added.stdout + added.stderr
    got = claude_cli(claude, home, env, "plugin", "install", "ingestd@ingestd", "--json", "-y")
    assert got.returncode == 0, got.stdout + got.stderr
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert pluginsetup.enabled_in(settings) == ["ingestd@ingestd"]
    assert not pluginsetup.hooks_installed_in(settings)
    daemon.start()
    try:
        standin.script = s.script(s.conversation("PLUGIN", s.read(str(hello)), s.text("It says hello.")))
        run = claude.run("PLUGIN read hello.txt", env=env).check()
        assert run.session_id is not None
        want = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"}
        sid = run.session_id

        def delivered() -> Counter[str] | None:
            c = hook_rows(daemon.db, sid)
            return c if want <= set(c) else None

        rows = wait_for("the session's hooks in the log", delivered)
        assert set(rows) <= INSTALLED
        once = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
        assert {e: rows[e] for e in once} == dict.fromkeys(once, 1)
    finally:
        daemon.stop()
