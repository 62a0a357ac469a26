"""A small hand-made database: a log and the projections it implies (no projector needed).

Shared by the replay, retention and verify tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import orjson
import pytest

from ingestd.core.rows import ToolCallRow
from ingestd.store.connection import connect, write_txn
from ingestd.store.migrate import migrate
from ingestd.store.upsert import UPSERT_TOOL

BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


def seed(conn: apsw.Connection, *, sessions: int = 2, days: int = 5) -> None:
    """Per session: one main agent, one message per day (log row + 5 usage rows), one hook event per day."""

    def body(c: apsw.Connection) -> None:
        for s in range(sessions):
            sid = f"sess-{s}"
            c.execute(
                "INSERT INTO sessions (id, project_path, started_at, status) VALUES (?, '/p', ?, 'working')",
                (sid, "2026-01-01T00:00:00.000Z"),
            )
            c.execute("INSERT INTO agents (id, session_id, type, status) VALUES (?, ?, 'main', 'working')", (sid, sid))
            for d in range(days):
                at = f"2026-01-{d + 1:02d}T10:{s:02d}:00.000Z"
                mid = f"msg_{s}_{d}"
                line = orjson.dumps({"type": "assistant", "sessionId": sid, "message": {"id": mid, "usage": {}}})
                c.execute(
                    "INSERT INTO events_raw (idempotency_key, source, event_type, payload, received_at, "
                    "session_id, origin, origin_offset) VALUES (?, 'jsonl', 'assistant', ?, ?, ?, ?, ?)",
                    (f"j:{sid}:{d}", line, at, sid, f"{sid}.jsonl", d * 100),
                )
                c.execute(
                    f"INSERT INTO token_usage (id, session_id, agent_id, message_id, model, {', '.join(BUCKETS)}, "
                    "occurred_at) VALUES (?, ?, ?, ?, 'claude-opus-4-6', ?, ?, ?, ?, ?, ?)",
                    (s * 1000 + d * 10, sid, sid, mid, *(10 * (i + 1) for i in range(len(BUCKETS))), at),
                )
                hook = orjson.dumps({"hook_event_name": "Stop", "session_id": sid})
                c.execute(
                    "INSERT INTO events_raw (idempotency_key, source, event_type, payload, received_at, "
                    "session_id, origin) VALUES (?, 'hook', 'Stop', ?, ?, ?, 'hook')",
                    (f"h:{sid}:{d}", hook, at, sid),
                )
                rid = c.execute("SELECT max(id) FROM events_raw").fetchall()[0][0]
                c.execute(
                    "INSERT INTO events (raw_event_id, session_id, agent_id, event_type, occurred_at) "
                    "VALUES (?, ?, ?, 'Stop', ?)",
                    (rid, sid, sid, at),
                )
                c.execute(UPSERT_TOOL, ToolCallRow(sid, f"toolu_{d}", sid, "Bash", at, None, "completed"))

    write_txn(conn, body)


@pytest.fixture
def db_path(tmp_path: Path) -> Iterator[Path]:
    """A migrated database holding ``seed``'s rows (a conftest imports it to use it)."""
    path = tmp_path / "ingestd.db"
    conn = connect(path)
    migrate(conn)
    seed(conn)
    conn.close()
    yield path
