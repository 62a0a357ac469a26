"""Database helpers for the ingest tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw

from ingestd.store.connection import connect
from ingestd.store.migrate import migrate

TABLES = {
    "sessions": "id",
    "agents": "id",
    "orchestration_edges": "id",
    "token_usage": "id",
    "tool_calls": "session_id, tool_use_id",
    "compactions": "session_id, boundary_id",
    "events": "raw_event_id",
    "token_usage_rollup": "session_id, model, bucket, slot, rate_effective_from",
}


def new_db(path: Path) -> apsw.Connection:
    conn = connect(path)
    migrate(conn)
    return conn


def dump(conn: apsw.Connection) -> dict[str, list[Any]]:
    """Every projection table, canonically ordered."""
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY {k}").fetchall() for t, k in TABLES.items()}


def count(conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    v: Any = conn.execute(sql, params).fetchall()[0][0]
    return int(v)
