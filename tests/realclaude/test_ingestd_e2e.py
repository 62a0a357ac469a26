"""ingestd end to end with a real Claude Code 2.1.332: ``serve`` on a temporary database and port,
``hooks install`` into an isolated home, ``claude -p`` prompts that spawn a subagent (in the
background, 2.1.332's default, and in the foreground) against the stand-in API; then the log holds
what the hooks delivered and ``tree --json`` shows each session's main agent, its subagent, the
edge between them and the tokens the stand-in reported.

Beside ingestd's hooks, a recorder hook on every observational event tells which events fired.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.realclaude import standin as s
from tests.realclaude.claude import Claude, Run
from tests.realclaude.recorder import Recorder
from tests.realclaude.scenarios import BEHAVIOUR_CHANGING, EVENTS
from tests.reliability.daemon import Daemon
from tests.support import free_port, wait_for

# MessageDisplay sits on the display path (every assistant message waits for its answer); the
# worktree hooks replace git's worktree handling: an observer hooks none of them.
OBSERVED = tuple(e for e in EVENTS if e not in (*BEHAVIOUR_CHANGING, "MessageDisplay"))
COMMAND_ONLY = ("SessionStart", "Setup")


@dataclass
class Session:
    """One prompt's session: its run, the stand-in's markers of the main agent and the subagent."""

    run: Run
    main: str
    sub: str

    @property
    def sid(self) -> str:
        assert self.run.session_id is not None
        return self.run.session_id


@dataclass
class Live:
    daemon: Daemon
    api: s.StandIn
    rec: Recorder
    installed: dict[str, Any]
    env: dict[str, str]
    sessions: dict[str, Session]

    def ingestd(self, *args: str) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "ingestd", *args, "--db", str(self.daemon.db)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        return r.stdout

    def tree(self, sid: str) -> dict[str, Any]:
        return dict(json.loads(self.ingestd("tree", sid, "--json")))

    def hook_rows(self, sid: str) -> Counter[str]:
        conn = apsw.Connection(str(self.daemon.db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            rows = conn.execute("SELECT event_type FROM events_raw WHERE source = 'hook' AND session_id = ?", (sid,))
            return Counter(r[0] for r in rows)
        finally:
            conn.close()

    def fired(self, sid: str) -> Counter[str]:
        return Counter(b["hook_event_name"] for b in self.rec.hook_bodies() if b.get("session_id") == sid)


def with_recorder(settings: dict[str, Any], rec: Recorder) -> dict[str, Any]:
    """``settings`` plus a recorder hook (its own matcher group) on every observed event."""
    hooks = settings.setdefault("hooks", {})
    http = rec.http_hooks([e for e in OBSERVED if e not in COMMAND_ONLY])
    command = rec.command_hooks(COMMAND_ONLY)
    for event, groups in {**http, **command}.items():
        hooks.setdefault(event, []).extend(groups)
    return settings


def spawn_script(tag: str, hello: Path, *, background: bool | None) -> s.Script:
    """``<tag>-MAIN`` spawns a reader (``background``: the Agent tool's ``run_in_background``),
    which reads ``hello`` and answers."""
    return s.script(
        s.conversation(
            f"{tag}-MAIN",
            s.agent(f"{tag}-SUB read hello.txt and report", description="Read a file", background=background),
            s.text("The reader is on it."),
            s.text("The reader is done."),
        ),
        s.conversation(f"{tag}-SUB", s.read(str(hello)), s.text("It says hello.")),
    )


@pytest.fixture(scope="module")
def live(claude_code: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("e2e")
    with s.StandIn(request_ids=True) as api, Recorder() as rec:
        claude = Claude(claude_code, tmp / "claude", api.url)
        home = claude.home()
        hello = home / "proj" / "hello.txt"
        hello.write_text("hello\n")
        (home / ".claude" / "projects").mkdir()
        daemon = Daemon(tmp / "ingestd.db", home / ".claude" / "projects", free_port(), tmp / "serve.log")
        daemon.start()
        try:
            env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
            live = Live(daemon, api, rec, {}, env, {})
            live.ingestd("hooks", "install", "--port", str(daemon.port))
            path = home / ".claude" / "settings.json"
            live.installed = json.loads(path.read_text())
            claude.write_settings(with_recorder(json.loads(path.read_text()), rec))
            for tag, background in (("ASYNC", None), ("SYNC", False)):
                api.script = spawn_script(tag, hello, background=background)
                run = claude.run(f"{tag}-MAIN spawn a reader").check()
                live.sessions[tag] = Session(run, f"{tag}-MAIN", f"{tag}-SUB")
            yield live
        finally:
            daemon.stop()


def totals(u: s.Usage) -> dict[str, int]:
    """The stand-in's usage in the keys of ``tree --json``'s ``totals``."""
    return {
        "input": u.input_tokens,
        "output": u.output_tokens,
        "cache_read": u.cache_read_input_tokens,
        "cache_write_5m": u.cache_creation_5m,
        "cache_write_1h": u.cache_creation_1h,
    }


def settled_tree(live: Live, session: Session) -> dict[str, Any]:
    """The session's tree once the daemon has projected every answer the stand-in gave."""
    main, sub = totals(live.api.usage_total(session.main)), totals(live.api.usage_total(session.sub))
    want = {k: main[k] + sub[k] for k in main}
    return dict(
        wait_for("the tree's totals", lambda: (t := live.tree(session.sid))["session"]["totals"] == want and t, 30)
    )


@pytest.mark.parametrize("tag", ["ASYNC", "SYNC"])
def test_installed_hooks_reach_the_log(live: Live, tag: str) -> None:
    sid = live.sessions[tag].sid
    installed = set(live.installed["hooks"])
    fired = Counter({e: n for e, n in live.fired(sid).items() if e in installed})
    assert {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "SubagentStart",
        "SubagentStop",
        "Stop",
        "SessionEnd",
    } <= set(fired)
    wait_for("every delivered hook in the log", lambda: live.hook_rows(sid) == fired, 15)


@pytest.mark.parametrize("tag", ["ASYNC", "SYNC"])
def test_every_observational_event_that_fired_is_in_the_log(live: Live, tag: str) -> None:
    sid = live.sessions[tag].sid
    settled_tree(live, live.sessions[tag])
    assert set(live.hook_rows(sid)) == set(live.fired(sid))


@pytest.mark.parametrize("tag", ["ASYNC", "SYNC"])
def test_the_tree_has_the_main_agent_and_its_subagent(live: Live, tag: str) -> None:
    session = live.sessions[tag]
    tree = settled_tree(live, session)
    bodies = [b for b in live.rec.hook_bodies() if b.get("session_id") == session.sid]
    spawn = next(b for b in bodies if b["hook_event_name"] == "PostToolUse" and b["tool_name"] == "Agent")
    agent_id = next(b["agent_id"] for b in bodies if b["hook_event_name"] == "SubagentStart")
    main = tree["tree"]
    assert main["agent_id"] == session.sid and main["type"] == "main" and main["status"] == "completed"
    assert main["own"]["totals"] == totals(live.api.usage_total(session.main))
    assert main["own"]["cost_complete"] is True
    (child,) = main["children"]
    assert child["agent_id"] == agent_id and child["type"] == "subagent"
    assert child["subagent_type"] == "general-purpose" and child["description"] == "Read a file"
    assert child["edge"]["parent_agent_id"] == session.sid and child["edge"]["tool_use_id"] == spawn["tool_use_id"]
    assert child["own"]["totals"] == totals(live.api.usage_total(session.sub))
    assert child["status"] == "completed"
    assert tree["orphans"] == [] and tree["session"]["agents"] == 2


def test_hooks_install_registers_every_observational_event_with_a_handler_claude_code_runs(live: Live) -> None:
    hooks = live.installed["hooks"]
    assert set(hooks) == set(OBSERVED)
    for event, groups in hooks.items():
        (hook,) = (h for g in groups for h in g["hooks"])
        assert hook["type"] == ("command" if event in COMMAND_ONLY else "http"), event
