"""The watchdog tick with an injected clock (no sleeping)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import apsw
import orjson
import pytest

from ingestd.core.records import NewLogRow
from ingestd.core.watchdog import watchdog_row
from ingestd.daemon import hookwriter, jobs
from ingestd.daemon.hookwriter import ThreadWriter
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.payload import decode as decode_payload

T0 = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1e9)
S = 1_000_000_000


def _open(db: Path) -> apsw.Connection:
    conn = connect(db)
    migrate(conn)
    return conn


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[tuple[ThreadWriter, Path]]:
    db = tmp_path / "wd.db"
    conn = _open(db)
    conn.execute(
        "INSERT INTO sessions (id, status, last_activity_at) VALUES ('s', 'working', '2026-01-01T00:00:00.000Z')"
    )
    conn.execute(
        "INSERT INTO agents (id, session_id, type, status, last_seen_at) VALUES"
        " ('s', 's', 'main', 'waiting', '2026-01-01T00:00:00.000Z'),"
        " ('a1', 's', 'subagent', 'completed', '2025-01-01T00:00:00.000Z')"
    )
    conn.close()
    w = ThreadWriter(lambda: _open(db), hookwriter.store_rows)
    w.start(asyncio.get_running_loop())
    yield w, db
    w.stop()


def _statuses(db: Path) -> dict[str, str]:
    conn = connect(db, readonly=True)
    try:
        return {r[0]: r[1] for r in conn.execute("SELECT id, status FROM agents")}
    finally:
        conn.close()


def _watchdog_rows(db: Path) -> list[tuple[str, bytes]]:
    conn = connect(db, readonly=True)
    try:
        rows = conn.execute(
            "SELECT received_at, codec, payload FROM events_raw WHERE source = 'ingestd' AND event_type = 'watchdog'"
        ).fetchall()
        return [(r[0], decode_payload(conn, r[1], r[2])) for r in rows]
    finally:
        conn.close()


async def test_quiet_agent_inside_the_window_logs_nothing(writer: tuple[ThreadWriter, Path]) -> None:
    w, db = writer
    assert await jobs.watchdog_tick(w, lambda: T0 + 599 * S, 600) == 0
    assert _watchdog_rows(db) == []


async def test_agent_quiet_past_the_window_logs_a_watchdog_row(writer: tuple[ThreadWriter, Path]) -> None:
    w, db = writer
    now = T0 + 601 * S
    # the main agent and its session; the completed subagent is terminal
    assert await jobs.watchdog_tick(w, lambda: now, 600) == 2
    [(received_at, payload)] = _watchdog_rows(db)
    assert received_at == "2026-01-01T00:10:01.000Z"
    assert orjson.loads(payload) == {"as_of": received_at, "window_s": 600}
    assert _statuses(db) == {"s": "unknown", "a1": "completed"}  # terminal stays terminal
    # nothing stale any more: no second row
    assert await jobs.watchdog_tick(w, lambda: now + S, 600) == 0
    assert len(_watchdog_rows(db)) == 1
    # new activity brings the agent back
    prompt = b'{"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":"go"}'
    ts = "2026-01-01T00:10:05.000Z"
    await w.submit([NewLogRow("h:k:p1", "hook", "UserPromptSubmit", prompt, ts, "s", "hook")])
    assert _statuses(db)["s"] == "working"


async def test_configurable_window(writer: tuple[ThreadWriter, Path]) -> None:
    """The daemon's tick logs the window it was configured with, so every writer and a replay apply it."""
    w, db = writer
    assert await jobs.watchdog_tick(w, lambda: T0 + 61 * S, 60) == 2
    [(_, payload)] = _watchdog_rows(db)
    assert orjson.loads(payload)["window_s"] == 60


async def test_run_stops_on_the_event(writer: tuple[ThreadWriter, Path]) -> None:
    w, db = writer
    stop = asyncio.Event()
    ticks = 0

    def clock() -> int:
        nonlocal ticks
        ticks += 1
        if ticks >= 3:
            stop.set()
        return T0 + ticks * 1000 * S

    await asyncio.wait_for(jobs.watchdog_loop(w, clock, window_s=600, interval_s=0.001, stop=stop), 5)
    # the first tick moved the agent to unknown; later ticks find nothing stale and log nothing
    assert len(_watchdog_rows(db)) == 1
    assert ticks >= 3


async def test_a_session_quiet_past_the_window_is_ticked_even_when_no_agent_is(
    writer: tuple[ThreadWriter, Path],
) -> None:
    """A session whose last activity was a subagent's stays `working` after its agents ended or
    went quiet; only a logged tick moves it (found live: it was counted active forever)."""
    w, db = writer
    conn = connect(db)
    conn.execute("UPDATE agents SET status = 'completed'")
    conn.close()
    assert await jobs.watchdog_tick(w, lambda: T0 + 601 * S, 600) == 1
    conn = connect(db, readonly=True)
    assert conn.execute("SELECT status FROM sessions").fetchall() == [("unknown",)]


def test_a_non_default_window_is_in_the_log_so_replay_agrees(tmp_path: Path) -> None:
    """Found live: a daemon run with --watchdog-window-s 2 left a database replay could not match."""
    from ingestd.projection.replay import replay
    from ingestd.store.watchdog_pass import effective_window
    from ingestd.store.writer import apply_batch

    db = tmp_path / "w.db"
    conn = _open(db)
    prompt = b'{"hook_event_name":"UserPromptSubmit","session_id":"s2","prompt":"go"}'
    apply_batch(
        conn, [NewLogRow("h:k:1", "hook", "UserPromptSubmit", prompt, "2026-01-01T00:00:00.000Z", "s2", "hook")]
    )
    apply_batch(conn, [watchdog_row(T0 + 5 * S, 2)])
    assert effective_window(conn) == 2
    assert conn.execute("SELECT status FROM agents WHERE id = 's2'").fetchall() == [("unknown",)]
    conn.close()
    result = replay(db, parallel_min_rows=sys.maxsize)
    assert result.comparison.ok, result.to_json()
