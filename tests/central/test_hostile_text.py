"""Text one store takes and the other cannot never stops the team (SPEC §12, §13).

A host whose transcripts and hooks carry hostile text (U+0000, lone surrogate escapes, bytes that
are not UTF-8, values of thousands of bytes, bidi controls) in every field that is projected or
keys the log (session ids, event names, titles, ``cwd``, tool names and ids, agent types, a
SessionEnd reason, a Task's description and subagent type the model wrote) ships whole beside a
clean host to a real PostgreSQL, both are projected, and the central store equals one machine
holding both hosts' logs, row for row, with the clean host's tokens all there.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import psycopg
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ingestd.central.pg import PgReadConn
from ingestd.central.pg import connect as pg_connect
from ingestd.cli import cli
from ingestd.core import hookkeys
from ingestd.core.storable import MAX_TEXT_BYTES
from ingestd.core.timefmt import parse
from ingestd.http.hooks import hook_row
from ingestd.report.cost import cost_report
from ingestd.report.window import make_window, resolve_zone
from ingestd.store.identity import database_identity
from ingestd.store.writer import apply_batch
from tests.central.support import NOW, central_log, local_db, project, ship_all
from tests.conftest import REPO
from tests.pgcluster import Cluster

ZONE = resolve_zone("UTC", {})
WINDOW = make_window(None, None, ZONE, datetime(2030, 1, 1, tzinfo=UTC))
FIELDS = (
    *("sid", "hsid", "cwd", "branch", "title", "mid", "model"),
    *("tuid", "tool", "desc", "stype", "aid", "event", "reason"),
)
SID_FILE = "5a5a5a5a-0000-4000-8000-000000000001"

# A JSON string literal's content, as bytes: escaped text (NUL and lone surrogates become \u
# escapes) or bytes that are not UTF-8.
_PART = st.text(st.characters(codec=None, categories=None), max_size=12).map(
    lambda s: json.dumps(s, ensure_ascii=True)[1:-1].encode()
) | st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\\u0000", b"\\ud800", b"\\udfff", b"\xe2\x80\xae"])
HOSTILE = st.one_of(
    st.lists(_PART, min_size=1, max_size=6).map(b"".join),
    st.integers(MAX_TEXT_BYTES - 8, 3 * MAX_TEXT_BYTES).map(lambda n: b"x\\u0000" + b"y" * n),
)
NASTY = {
    "sid": b"sess\\u0000ion",
    "hsid": b"hook\\u0000sess",
    "cwd": b"/home/u/\\u0000p\xff",
    "branch": b"ma\\u0000in",
    "title": b"T\\u0000" + b"t" * 3000,
    "mid": b"msg\\u0000x",
    "model": b"claude\\u0000x",
    "tuid": b"toolu\\u0000\\ud800",
    "tool": b"Ba\\u0000sh",
    "desc": b"de\\u0000sc\xe2\x80\xae",
    "stype": b"Expl\\u0000ore",
    "aid": b"a\\u0000b",
    "event": b"Stop\\u0000",
    "reason": b"clear\\u0000",
}


def _fill(template: dict[str, Any], v: dict[str, bytes]) -> bytes:
    """``template`` as a JSON line, each ``"@name"`` string replaced by the literal of ``v[name]``."""
    out = json.dumps(template, separators=(",", ":")).encode()
    for name, lit in v.items():
        out = out.replace(f'"@{name}"'.encode(), b'"' + lit + b'"')
    return out


def _transcript(v: dict[str, bytes]) -> bytes:
    base = {"isSidechain": False, "sessionId": "@sid", "cwd": "@cwd", "gitBranch": "@branch", "version": "2.1.39"}
    usage = {"input_tokens": 7, "output_tokens": 11, "cache_read_input_tokens": 13, "cache_creation_input_tokens": 0}
    lines = [
        {**base, "type": "user", "uuid": "u0", "parentUuid": None, "timestamp": "2026-02-12T10:00:00.000Z",
         "message": {"role": "user", "content": "hi"}},
        {"type": "custom-title", "customTitle": "@title", "sessionId": "@sid"},
        {**base, "type": "assistant", "uuid": "u1", "parentUuid": "u0", "timestamp": "2026-02-12T10:00:01.000Z",
         "message": {"id": "@mid", "type": "message", "role": "assistant", "model": "@model", "usage": usage,
                     "content": [{"type": "tool_use", "id": "@tuid", "name": "Task",
                                  "input": {"description": "@desc", "subagent_type": "@stype", "prompt": "p"}},
                                 {"type": "tool_use", "id": "@aid", "name": "@tool", "input": {}}]}},
        {**base, "type": "user", "uuid": "u2", "parentUuid": "u1", "timestamp": "2026-02-12T10:00:02.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "@tuid", "content": "ok"}]}},
    ]  # fmt: skip
    return b"".join(_fill(x, v) + b"\n" for x in lines)


def _hooks(v: dict[str, bytes]) -> list[bytes]:
    return [
        _fill({"hook_event_name": "SessionStart", "session_id": "@hsid", "cwd": "@cwd", "source": "startup"}, v),
        _fill(
            {"hook_event_name": "PreToolUse", "session_id": "@hsid", "tool_name": "@tool", "tool_use_id": "@tuid"}, v
        ),
        _fill(
            {"hook_event_name": "SubagentStart", "session_id": "@hsid", "agent_id": "@aid", "agent_type": "@stype"}, v
        ),
        _fill({"hook_event_name": "@event", "session_id": "@hsid", "title": "@title"}, v),
        _fill({"hook_event_name": "SessionEnd", "session_id": "@hsid", "reason": "@reason"}, v),
    ]


def _add_hooks(conn: Any, bodies: list[bytes]) -> int:
    """The deliveries of ``bodies`` the receiver accepts, written as the hook writer does; how many."""
    base = int(parse(NOW).timestamp()) * 10**9
    ident = database_identity(conn)
    rows = []
    for i, body in enumerate(bodies):
        event = hookkeys.parse_body(body)
        if isinstance(event, hookkeys.Rejected):
            continue  # the receiver's 400 (a blank session id, ...): nothing logged
        ns = base + i * 10**6
        rows.append(hook_row(event, body, hookkeys.idempotency_key(event, header_key=None, received_ns=ns,
                                                                   instance="t", counter=i), ns))  # fmt: skip
    apply_batch(conn, rows, ctx=ident)
    return len(rows)


_ROWS = {
    "sessions": "id, project_slug, project_path, started_at, last_activity_at, status, git_branch, cc_version,"
    " title, slug, entrypoint, end_reason, title_source",
    "agents": "session_id, id, type, subagent_type, status, parent_agent_id, first_seen_at, last_seen_at,"
    " outcome_cause, is_compaction, description",
    "orchestration_edges": "session_id, parent_agent_id, child_agent_id, source, created_at, tool_use_id",
    "token_usage": "session_id, agent_id, message_id, model, input, output, cache_read, cache_write_5m,"
    " cache_write_1h, occurred_at, claim_rank",
    "tool_calls": "session_id, tool_use_id, agent_id, tool_name, started_at, ended_at, status",
    "events": "session_id, agent_id, event_type, occurred_at",
    "quarantine": "reason, session_id, origin, origin_offset, detail",
}


def _dump(conn: Any) -> dict[str, list[tuple[Any, ...]]]:
    return {t: sorted((tuple(r) for r in conn.execute(f"SELECT {c} FROM {t}")), key=repr) for t, c in _ROWS.items()}


def _team(v: dict[str, bytes], work: Path, url: str) -> None:
    root = work / "x"
    (root / "-home-u-x").mkdir(parents=True)
    (root / "-home-u-x" / f"{SID_FILE}.jsonl").write_bytes(_transcript(v))
    clean_root = REPO / "fixtures" / "projects"
    hostile = local_db(work / "x.db", [root], "host-x")
    clean = local_db(work / "c.db", [clean_root], "host-c")
    union = local_db(work / "u.db", [root, clean_root], "host-u")
    try:
        hooks = _hooks(v)
        _add_hooks(hostile, hooks)
        _add_hooks(union, hooks)
        # the hostile host ships first: nothing it holds may stop it or the clean host after it
        for conn in (hostile, clean):
            ship_all(conn, url, batch_rows=3)
        for conn, host in ((hostile, "host-x"), (clean, "host-c")):
            local_rows = conn.execute("SELECT count(*) FROM events_raw").fetchall()[0][0]
            assert len(central_log(url, host)) == local_rows, host
        project(url)
        central = PgReadConn(pg_connect(url, autocommit=True))
        try:
            cx, cc, cu = (cost_report(c, by=None, window=WINDOW, zone=ZONE) for c in (hostile, clean, union))
            got = cost_report(central, by=None, window=WINDOW, zone=ZONE)
            assert cc["tokens"] > 0
            assert got["totals"] == cu["totals"] == {b: cx["totals"][b] + cc["totals"][b] for b in got["totals"]}
            by_host = cost_report(central, by="host", window=WINDOW, zone=ZONE)["rows"]
            assert {r["host_id"]: r["totals"] for r in by_host}["host-c"] == cc["totals"]
            assert _dump(central) == _dump(union)
            assert central.execute("SELECT count(*) FROM quarantine WHERE reason = 'storage'") == [(0,)]
        finally:
            central.close()
    finally:
        for conn in (hostile, clean, union):
            conn.close()


def _fresh_db(cluster: Cluster) -> str:
    name = "hostile_" + uuid.uuid4().hex[:12]
    with psycopg.connect(cluster.url(), autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return cluster.url(name)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.fixed_dictionaries({f: HOSTILE for f in FIELDS}))
@example(NASTY)
def test_hostile_text_ships_and_projects_and_central_equals_local(pg_cluster: Cluster, v: dict[str, bytes]) -> None:
    work = Path(tempfile.mkdtemp(prefix="ingestd-hostile-"))
    try:
        _team(v, work, _fresh_db(pg_cluster))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_a_session_the_store_refuses_is_quarantined_and_the_rest_projects(
    tmp_path: Path, pg_url: str, monkeypatch: Any
) -> None:
    """The store's own refusal of one session's rows (here: the text rule switched off, so a NUL
    reaches PostgreSQL) costs that session only: the others and the other host are projected, and
    the refusal is a ``storage`` quarantine row on the session's newest log row."""
    from ingestd.core import derive

    v = dict(NASTY)
    root = tmp_path / "x"
    (root / "-home-u-x").mkdir(parents=True)
    (root / "-home-u-x" / f"{SID_FILE}.jsonl").write_bytes(_transcript(v))
    hostile = local_db(tmp_path / "x.db", [root], "host-x")
    clean = local_db(tmp_path / "c.db", [REPO / "fixtures" / "projects"], "host-c")
    ship_all(hostile, pg_url)
    ship_all(clean, pg_url)
    monkeypatch.setattr(derive, "storable_changes", lambda ch: ch)
    project(pg_url)
    central = PgReadConn(pg_connect(pg_url, autocommit=True))
    try:
        cc = cost_report(clean, by=None, window=WINDOW, zone=ZONE)
        assert cost_report(central, by=None, window=WINDOW, zone=ZONE)["totals"] == cc["totals"]
        (sid,) = {r[0] for r in hostile.execute("SELECT id FROM sessions")}
        got = central.execute("SELECT reason, host_id, session_id, detail FROM quarantine")
        assert [(r[0], r[1], r[2]) for r in got] == [("storage", "host-x", sid)]
        assert got[0][3].startswith("the central store refused the session's projection: ")
        assert central.execute("SELECT count(*) FROM sessions WHERE id = ?", (sid,)) == [(0,)]
        folded = "SELECT projected_through = (SELECT max(id) FROM events_raw) FROM projector_progress"
        assert central.execute(folded) == [(True,)]
        res = CliRunner().invoke(cli, ["status", "--store", pg_url, "--json"])
        assert res.exit_code == 0, res.output
        q = orjson.loads(res.stdout)["quarantine"]
        assert q["by_reason"] == {"storage": 1} and q["listed"][0]["session_id"] == sid
    finally:
        central.close()
        hostile.close()
        clean.close()
