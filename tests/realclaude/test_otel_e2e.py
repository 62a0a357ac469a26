"""Claude Code's own telemetry end to end with a real Claude Code 2.1.332: ``serve`` on a temporary
database and port, ``hooks install --otel`` into an isolated home, one ``claude -p`` prompt with a
Read against the stand-in API (answers carry ``request-id``; an auxiliary call, a request no
conversation claims, has no transcript message). Then transcript, hooks and OTel describe the same
session: every api_request of a transcript message is matched to it by its request id and agrees
with it, the auxiliary calls are usage of their own, and the totals are the transcript's plus
exactly the auxiliary calls, which are what the stand-in billed in all. A second run the API
refuses (429) sends Claude Code's own ``api_error`` event, folded into the session's telemetry.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.realclaude import standin as s
from tests.realclaude.claude import Claude, Run
from tests.reliability.daemon import Daemon
from tests.support import free_port, wait_for

MARKER = "OTEL-E2E"
REFUSED = "OTEL-ERR"


@dataclass
class Live:
    daemon: Daemon
    api: s.StandIn
    env: dict[str, str]
    run: Run
    settings: dict[str, Any]
    refused: Run

    def ingestd(self, *args: str) -> tuple[int, str]:
        r = subprocess.run(
            [sys.executable, "-m", "ingestd", *args, "--db", str(self.daemon.db)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return r.returncode, r.stdout + r.stderr

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        conn = apsw.Connection(str(self.daemon.db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return [tuple(r) for r in conn.execute(sql, params)]
        finally:
            conn.close()


@pytest.fixture(scope="module")
def live(claude_code: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("otel-e2e")
    with s.StandIn(request_ids=True) as api:
        claude = Claude(claude_code, tmp / "claude", api.url)
        home = claude.home()
        hello = home / "proj" / "hello.txt"
        hello.write_text("hello\n")
        (home / ".claude" / "projects").mkdir()
        daemon = Daemon(tmp / "ingestd.db", home / ".claude" / "projects", free_port(), tmp / "serve.log")
        daemon.start()
        try:
            env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
            r = subprocess.run(
                [sys.executable, "-m", "ingestd", "hooks", "install", "--otel", "--port", str(daemon.port)],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert r.returncode == 0, r.stderr
            settings = json.loads((home / ".claude" / "settings.json").read_text())
            api.script = s.script(s.conversation(MARKER, s.read(str(hello)), s.text("It says hello.")))
            # exports every 500 ms / 1 s (the defaults are 5 s / 60 s; what is pending goes at exit too)
            fast = {"OTEL_LOGS_EXPORT_INTERVAL": "500", "OTEL_METRIC_EXPORT_INTERVAL": "1000"}
            run = claude.run(f"{MARKER} read hello.txt", env=fast).check()
            # the same home against an API of its own, so the first run's calls stay all there is above
            refusing = s.StandIn(s.script(s.conversation(REFUSED, s.api_error(429, "rate_limit_error"))))
            with refusing:
                other = dataclasses.replace(claude, base_url=refusing.url, runs=[])
                refused = other.run(f"{REFUSED} anything", home=home, env=fast)  # an API error: exits non-zero
            yield Live(daemon, api, env, run, settings, refused)
        finally:
            daemon.stop()


def _sid(live: Live) -> str:
    assert live.run.session_id is not None
    return live.run.session_id


def _settled(live: Live) -> None:
    """Wait until every API call is an otel_requests row and every transcript message is projected."""
    calls = len(live.api.messages())
    mine = len(live.api.messages(MARKER))
    sid = _sid(live)
    wait_for(
        "every api_request projected and every transcript message read",
        lambda: (
            live.rows("SELECT count(*) FROM otel_requests WHERE session_id = ?", sid)[0][0] == calls
            and live.rows("SELECT count(*) FROM token_usage WHERE session_id = ? AND claim_rank >= 0", sid)[0][0]
            == mine
        ),
        30,
    )


def test_install_otel_wrote_the_exporter_env(live: Live) -> None:
    env = live.settings["env"]
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == f"http://127.0.0.1:{live.daemon.port}"
    assert env["CLAUDE_CODE_ENABLE_TELEMETRY"] == "1" and env["OTEL_LOGS_EXPORTER"] == "otlp"


def test_transcript_messages_are_matched_by_request_id_and_agree(live: Live) -> None:
    _settled(live)
    sid = _sid(live)
    mine = {m.message_id for m in live.api.messages(MARKER)}
    matched = live.rows(
        "SELECT message_id, matched_by, agrees, mismatch FROM otel_requests"
        " WHERE session_id = ? AND message_id IS NOT NULL",
        sid,
    )
    assert {r[0] for r in matched} == mine
    assert {(r[1], r[2], r[3]) for r in matched} == {("request_id", 1, None)}


def test_totals_are_the_transcripts_plus_exactly_the_auxiliary_calls(live: Live) -> None:
    _settled(live)
    sid = _sid(live)
    # calls no conversation claims: auxiliary (a headless run of 2.1.332 may make none)
    aux = [m for m in live.api.messages() if m.conversation is None]
    own = live.rows("SELECT count(*) FROM token_usage WHERE session_id = ? AND claim_rank < 0", sid)[0][0]
    assert own == len(aux)
    billed = live.api.usage_total()
    got = live.rows(
        "SELECT sum(input), sum(output), sum(cache_read), sum(cache_write_5m), sum(cache_write_1h)"
        " FROM token_usage WHERE session_id = ?",
        sid,
    )[0]
    assert got == (
        billed.input_tokens,
        billed.output_tokens,
        billed.cache_read_input_tokens,
        billed.cache_creation_5m,
        billed.cache_creation_1h,
    )
    code, out = live.ingestd("cost", "--by", "source", "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["telemetry"]["disagreements"] == 0 and doc["telemetry"]["otel_only"] == len(aux)


def test_the_exports_are_logged_and_doctor_sees_them(live: Live) -> None:
    _settled(live)
    requests = live.rows("SELECT count(*) FROM events_raw WHERE source = 'otlp' AND event_type = 'request'")[0][0]
    assert requests >= 2  # logs and metrics at least
    code, out = live.ingestd("doctor", "--json")
    assert code in (0, 1), out
    (finding,) = [f for f in json.loads(out)["findings"] if f["check"] == "telemetry"]
    assert finding["level"] == "ok" and "telemetry reaches the daemon" in finding["message"]


def test_a_refused_request_is_claude_codes_api_error_in_the_sessions_telemetry(live: Live) -> None:
    sid = live.refused.session_id
    assert sid is not None
    wait_for(
        "the api_error event projected",
        lambda: (
            live.rows("SELECT count(*) FROM otel_requests WHERE session_id = ? AND event = 'api_error'", sid)[0][0] > 0
        ),
        30,
    )
    errors = live.rows("SELECT agent_id, error FROM otel_requests WHERE session_id = ? AND event = 'api_error'", sid)
    assert {agent for agent, _ in errors} == {sid}  # the main thread's call: the main agent
    assert all("429" in str(err) for _, err in errors), errors
    code, out = live.ingestd("tree", sid, "--json")
    assert code == 0, out
    telemetry = json.loads(out)["telemetry"]
    assert telemetry["api_errors"] and "429" in telemetry["api_errors"][0]["error"]
