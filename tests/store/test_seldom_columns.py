"""The session and agent upserts leave their seldom-changing indexed columns' indexes alone when the
values are unchanged, and still store a changed value: a hook for a known session writes no page of
``sessions_project`` or ``agents_parent`` (read off the WAL's frames), and a row whose project path,
fork columns, team or parent moved ends as stored by a full upsert."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import orjson

from ingestd.core import hookkeys
from ingestd.core.derive import Changes
from ingestd.core.records import NewLogRow
from ingestd.core.rows import AgentRow, SessionRow
from ingestd.daemon import hookwriter
from ingestd.http.hooks import hook_row
from ingestd.store.connection import Db, connect, write_txn
from ingestd.store.migrate import migrate
from ingestd.store.upsert import write_changes

SID = "c0000000-0000-4000-8000-000000000001"
AGENT = "a1c0ffee"
BASE = {"session_id": SID, "cwd": "/home/u/p", "transcript_path": f"/t/{SID}.jsonl"}


def _row(n: int, **fields: Any) -> NewLogRow:
    body = orjson.dumps({**BASE, **fields})
    parsed = hookkeys.parse_body(body)
    assert not isinstance(parsed, hookkeys.Rejected)
    key = hookkeys.idempotency_key(parsed, header_key=None, received_ns=n, instance="test", counter=n)
    return hook_row(parsed, body, key, 1_780_000_000_000_000_000 + n * 1_000_000_000)


def _pages_written(conn: Db, db: Path) -> list[str]:
    """The names (tables, indexes) of the pages in the WAL, one per frame."""
    names = {int(pg): str(name) for name, pg in conn.execute("SELECT name, pageno FROM dbstat")}
    page = int(conn.execute("PRAGMA page_size").fetchall()[0][0])
    wal = Path(f"{db}-wal").read_bytes()
    out = []
    for off in range(32, len(wal) - 23, 24 + page):
        out.append(names.get(struct.unpack(">I", wal[off : off + 4])[0], "?"))
    return out


def test_a_hook_for_a_known_session_writes_no_page_of_the_unchanged_indexes(tmp_path: Path) -> None:
    db = tmp_path / "ingestd.db"
    conn = connect(db)
    migrate(conn)
    apply = hookwriter.make_apply()
    apply(conn, [_row(0, hook_event_name="SessionStart", source="startup")])
    apply(conn, [_row(1, hook_event_name="SubagentStart", agent_id=AGENT, agent_type="Explore")])
    apply(conn, [_row(2, hook_event_name="PreToolUse", tool_name="Read", tool_use_id="tu_1", agent_id=AGENT)])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    apply(conn, [_row(3, hook_event_name="PreToolUse", tool_name="Read", tool_use_id="tu_2", agent_id=AGENT)])
    pages = _pages_written(conn, db)
    assert "sessions" in pages and "agents" in pages  # the rows did move (last activity, last seen)
    untouched = {"sessions_project", "sessions_root_uuid", "sessions_forked_from", "sessions_team_name"}
    untouched |= {"agents_parent", "sqlite_autoindex_agents_1"}
    assert untouched.isdisjoint(pages), pages
    conn.close()


def _stored(conn: Db, table: str, fields: tuple[str, ...], where: str, args: tuple[Any, ...]) -> list[Any]:
    return list(conn.execute(f"SELECT {', '.join(fields)} FROM {table} WHERE {where}", args).fetchall()[0])


def test_a_moved_seldom_column_is_stored(db: Db) -> None:
    session = SessionRow(*[None] * len(SessionRow._fields))._replace(
        id="s", status="working", unmatched_notices=0, fork_start=0, project_path="/a", last_activity_at="t1"
    )
    main = AgentRow(*[None] * len(AgentRow._fields))._replace(
        id="m", session_id="s", type="main", status="working", is_compaction=0
    )
    child = main._replace(id="c", type="subagent", parent_agent_id="m")
    other = main._replace(id="o")
    write_txn(db, lambda c: write_changes(c, Changes(sessions=[session], agents=[main, other, child])))
    moved = session._replace(project_path="/b", root_uuid="r", forked_from="f", team_name="t", last_activity_at="t2")
    moved_child = child._replace(parent_agent_id="o", last_seen_at="t2")
    write_txn(db, lambda c: write_changes(c, Changes(sessions=[moved], agents=[moved_child])))
    assert _stored(db, "sessions", SessionRow._fields, "id = ?", ("s",)) == list(moved)
    got = _stored(db, "agents", AgentRow._fields, "session_id = ? AND id = ?", ("s", "c"))
    assert got == list(moved_child)
    # back to NULL: the guard compares with IS NOT, so a NULL is assigned like any other value
    write_txn(db, lambda c: write_changes(c, Changes(sessions=[session], agents=[child])))
    assert _stored(db, "sessions", SessionRow._fields, "id = ?", ("s",)) == list(session)
    assert _stored(db, "agents", AgentRow._fields, "session_id = ? AND id = ?", ("s", "c")) == list(child)
