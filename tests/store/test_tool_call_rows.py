"""The tool calls' compact table (migration 0034): the view ``tool_calls`` gives back every value
written, whatever its form, from the store's upserts and from a database of main before it
(``fixtures/upgrade/main-0032.db.gz``, made by main at 897751a from ``fixtures/projects``)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from ingestd.core.rows import ToolCallRow
from ingestd.core.toolstatus import STATUSES
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.upsert import ENSURE_SESSION, TOOL_STATUS_CODES, UPSERT_TOOL

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "upgrade" / "main-0032.db.gz"
VIEW = "SELECT * FROM tool_calls ORDER BY session_id, tool_use_id"
SID = "0062cc70-6d80-4eaf-9752-7b4d732d475b"

# (agent_id, started_at, ended_at, stored as): the session's own id, canonical times compact
VALUES: list[tuple[str | None, str | None, str | None, tuple[str, str, str]]] = [
    (SID, "2025-11-18T14:44:54.404Z", "2025-11-18T14:45:21.699Z", ("integer", "integer", "integer")),
    ("a1b2c3d", "1970-01-01T00:00:00.000Z", None, ("text", "integer", "null")),
    (None, "1969-12-31T23:59:59.999Z", "2025-02-30T00:00:00.000Z", ("null", "text", "text")),
    ("0", "2025-11-18T14:44:54.404+00:00", "2025-11-18 14:44:54.404Z", ("text", "text", "text")),
    (SID.upper(), None, "9999-12-31T23:59:59.999Z", ("text", "null", "integer")),
]


def _calls(session_id: str = SID) -> list[ToolCallRow]:
    return [
        ToolCallRow(
            session_id,
            f"toolu_{i:02d}",
            session_id if agent == SID else agent,
            "Bash" if i % 2 else None,
            started,
            ended,
            STATUSES[i % len(STATUSES)],
            f"p{i}" if i % 2 else None,
            "not allowed" if STATUSES[i % len(STATUSES)] == "denied" else None,
        )
        for i, (agent, started, ended, _) in enumerate(VALUES)
    ]


def test_every_value_comes_back_through_the_view_and_an_upsert_replaces_the_row(tmp_path: Path) -> None:
    conn = connect(tmp_path / "d.db")
    migrate(conn)
    calls = _calls()
    with conn:
        conn.execute(ENSURE_SESSION, (SID,))
        conn.executemany(UPSERT_TOOL, calls)
    assert conn.execute(VIEW).fetchall() == [tuple(c) for c in calls]
    stored = conn.execute("SELECT typeof(agent_id), typeof(started), typeof(ended) FROM tool_call_rows").fetchall()
    assert stored == [v[3] for v in VALUES]
    later = [c._replace(status="completed", ended_at="2025-11-18T14:46:00.000Z", agent_id=SID) for c in calls]
    with conn:
        conn.executemany(UPSERT_TOOL, later)
    assert conn.execute(VIEW).fetchall() == [tuple(c) for c in later]
    assert conn.execute("SELECT DISTINCT typeof(agent_id), status FROM tool_call_rows").fetchall() == [("integer", 1)]
    # the session's calls by the view's session_id: the log_sessions lookup, then the key's range
    plan = " ".join(
        str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN SELECT * FROM tool_calls WHERE session_id = '{SID}'")
    )
    assert "SCAN" not in plan, plan
    assert sorted(TOOL_STATUS_CODES) == sorted(STATUSES)
    conn.close()


def test_a_database_of_main_before_the_compact_table_keeps_every_tool_call(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    db.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    conn = connect(db)
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'tool_calls'").fetchall() == [("table",)]
    # beside the fixture's own calls, every form of value, and calls of a session the log does not name
    extra = [*_calls(), *_calls("a-session-of-no-log-row")]
    conn.executemany(f"INSERT INTO tool_calls VALUES ({', '.join('?' * 9)})", extra)
    before: list[Any] = conn.execute(VIEW).fetchall()
    assert len(before) > len(extra)
    migrate(conn)
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'tool_calls'").fetchall() == [("view",)]
    assert conn.execute(VIEW).fetchall() == before
    # the fixture's calls: its main agents' stored as 0 (one is a subagent's), every time an integer
    assert conn.execute(
        "SELECT typeof(agent_id), typeof(started), typeof(ended), count(*) FROM tool_call_rows"
        " WHERE tool_use_id NOT GLOB 'toolu_[0-9][0-9]' GROUP BY 1, 2, 3 ORDER BY 1"
    ).fetchall() == [("integer", "integer", "integer", 5), ("text", "integer", "integer", 1)]
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


def test_an_insert_into_the_view_stores_what_the_upsert_stores(tmp_path: Path) -> None:
    conn = connect(tmp_path / "d.db")
    migrate(conn)
    with conn:
        conn.execute(ENSURE_SESSION, (SID,))
        conn.executemany(UPSERT_TOOL, _calls())
        # a session no log row names yet, by hand
        conn.executemany(f"INSERT INTO tool_calls VALUES ({', '.join('?' * 9)})", _calls("by-hand"))
    by_sid = {
        s: conn.execute(
            "SELECT tool_use_id, agent_id, tool_name, started, ended, status, prompt_id, reason FROM tool_call_rows"
            " WHERE sid = (SELECT id FROM log_sessions WHERE session_id = ?) ORDER BY tool_use_id",
            (s,),
        ).fetchall()
        for s in (SID, "by-hand")
    }
    assert by_sid[SID] == by_sid["by-hand"] and len(by_sid[SID]) == len(VALUES)
    assert conn.execute("SELECT * FROM tool_calls WHERE session_id = 'by-hand' ORDER BY tool_use_id").fetchall() == [
        tuple(c) for c in _calls("by-hand")
    ]
    conn.close()


def test_the_session_reports_read_the_view_by_its_key(tmp_path: Path) -> None:
    from ingestd.ingest.backfill import ingest_roots
    from ingestd.report.prompts import prompts_report
    from ingestd.report.timeline import timeline_report
    from ingestd.report.tree import tree_report

    conn = connect(tmp_path / "r.db")
    migrate(conn)
    ingest_roots(conn, [ROOT / "fixtures" / "projects"], now="2026-12-03T00:00:00.000Z")
    seen: list[tuple[str, Any]] = []

    def trace(_cursor: Any, sql: str, bindings: Any) -> bool:
        if "tool_calls" in sql:
            seen.append((sql, bindings))
        return True

    sessions = [s for (s,) in conn.execute("SELECT DISTINCT session_id FROM tool_calls")]
    assert sessions
    conn.exec_trace = trace
    for sid in sessions:
        for report in (prompts_report, timeline_report, tree_report):
            report(conn, sid)
    conn.exec_trace = None
    assert seen
    for sql, bindings in seen:
        plan = [str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", bindings)]
        # a view joined from the right of a LEFT JOIN is read whole, once per statement
        assert not any(p.startswith("MATERIALIZE") or p == "SCAN c" for p in plan), (sql, plan)
    conn.close()


def test_a_delete_from_the_view_deletes_its_rows(tmp_path: Path) -> None:
    conn = connect(tmp_path / "d.db")
    migrate(conn)
    with conn:
        conn.executemany(f"INSERT INTO tool_calls VALUES ({', '.join('?' * 9)})", [*_calls(), *_calls("other")])
        conn.execute("DELETE FROM tool_calls WHERE session_id = ? AND tool_use_id <> 'toolu_01'", (SID,))
    assert conn.execute("SELECT session_id, tool_use_id FROM tool_calls WHERE session_id = ?", (SID,)).fetchall() == [
        (SID, "toolu_01")
    ]
    assert conn.execute("SELECT count(*) FROM tool_call_rows").fetchall() == [(1 + len(VALUES),)]
    conn.close()
