"""Shared helpers of the reliability suite: snapshots of everything stored, and replay checks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ingestd.projection.replay import replay
from ingestd.store.connection import connect
from ingestd.store.payload import register_sql

SID = "11111111-2222-4333-8444-555555555555"
# Every table a bad input must not disturb, canonically ordered (the log first).
TABLES = {
    "events_raw": "id",
    "sessions": "id",
    "agents": "session_id, id",
    "orchestration_edges": "id",
    "token_usage": "id",
    "tool_calls": "session_id, tool_use_id",
    "compactions": "session_id, boundary_id",
    "events": "raw_event_id",
    "token_usage_rollup": "session_id, model, slot, rate_effective_from, tier, speed",
    "summaries": "origin, origin_gen, origin_offset",
}


def snapshot(db: Path) -> dict[str, list[Any]]:
    """Every row of every table in ``TABLES`` (read-only connection)."""
    conn = connect(db, readonly=True)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY {k}").fetchall() for t, k in TABLES.items()}
    finally:
        conn.close()


def q(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Rows of one read-only query."""
    conn = connect(db, readonly=True)
    register_sql(conn)  # payload_bytes(codec, payload): the bytes as read
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def assert_kept(before: dict[str, list[Any]], after: dict[str, list[Any]], *, session: str | None = None) -> None:
    """Nothing stored before changed: the old log rows are a prefix, and the projection rows of
    ``session`` (every projection row when None) are unchanged."""
    assert after["events_raw"][: len(before["events_raw"])] == before["events_raw"]
    for t in TABLES:
        if t == "events_raw":
            continue
        old = before[t]
        if session is not None:
            old = [r for r in old if session in r]
            new = [r for r in after[t] if session in r]
        else:
            new = after[t]
        assert new == old, t


def assert_replay_ok(db: Path, workdir: Path) -> None:
    """``ingestd replay``: two rebuilds from the log equal each other and the live projections.

    The rebuilds run in this process (``parallel_min_rows=sys.maxsize``: the same rebuild, without starting two
    Python processes, which cost far more than these small logs; the CLI's tests run them parallel)."""
    result = replay(db, workdir=workdir, parallel_min_rows=sys.maxsize)
    assert result.comparison.ok, result.comparison.differences
