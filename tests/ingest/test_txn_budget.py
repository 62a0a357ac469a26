"""Tailer transactions fitted to a time budget while another writer waits for the lock
(``Tailing.txn_budget_s``, ``LockWaits``): the batches shrink in proportion to the overrun, grow
back once nobody waits, and the projections are the ones whole batches give."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

from ingestd.core.touch import Ctx
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.ingestrun import INGEST_TXN_BUDGET_S, IngestRunner
from ingestd.daemon.root import LOCK_WAITS, TAILER, assemble
from ingestd.ingest.backfill import ingest_roots
from ingestd.ingest.readfile import TXN_MIN_ROWS, Batcher, Tailing
from ingestd.ingest.summary import Summary
from ingestd.projection.dump import TABLES, canonical_rows
from ingestd.store.connection import LockWaits, connect, poll_when_busy
from ingestd.store.migrate import migrate
from tests.hookclient import JSON_HEADERS

NOW = "2026-12-04T00:00:00.000Z"
SID = "11111111-2222-4333-8444-555555555555"


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _batcher(db: apsw.Connection, tail: Tailing, batch_rows: int = 256) -> Batcher:
    return Batcher(db, Ctx(), Summary(), batch_rows, tail)


def test_a_transaction_over_budget_shrinks_the_batches_while_someone_waits(db: apsw.Connection) -> None:
    waiting = True
    tail = Tailing(txn_budget_s=0.025, contended=lambda: waiting)
    b = _batcher(db, tail)
    b._fit(256, 0.100)  # four times the budget: a quarter of the rows
    assert b.limit == 64
    b._fit(64, 0.020)  # within the budget, over half of it: kept
    assert b.limit == 64
    b._fit(64, 0.010)  # under half: doubled
    assert b.limit == 128
    b._fit(128, 10.0)  # far over: no fewer than the floor
    assert b.limit == TXN_MIN_ROWS
    b._fit(3, 0.001)  # a short batch (a file's end) says nothing of a full one
    assert b.limit == TXN_MIN_ROWS
    assert tail.rows_limit == TXN_MIN_ROWS  # kept for the tailer's next call
    assert _batcher(db, tail).limit == TXN_MIN_ROWS
    waiting = False
    for _ in range(8):  # nobody waits: back to whole batches however long they take
        b._fit(b.limit, 1.0)
    assert b.limit == 256


def test_without_a_budget_the_batches_stay_whole(db: apsw.Connection) -> None:
    b = _batcher(db, Tailing(contended=lambda: True))
    b._fit(256, 10.0)
    assert b.limit == 256


def test_a_wait_for_the_lock_is_noted_and_forgotten_after_the_window(tmp_path: Path) -> None:
    path = tmp_path / "ingestd.db"
    holder = connect(path)
    migrate(holder)
    clock = Clock()
    waits = LockWaits(window_s=5.0, clock=clock)
    other = poll_when_busy(connect(path), timeout_ms=30, on_wait=waits.note)
    assert not waits.recent()
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(apsw.BusyError):
        other.execute("BEGIN IMMEDIATE")
    holder.execute("ROLLBACK")
    assert waits.recent()
    clock.t += 5.5
    assert not waits.recent()
    other.execute("BEGIN IMMEDIATE")  # a lock free at once is no wait
    other.execute("ROLLBACK")
    assert not waits.recent()
    holder.close()
    other.close()


def _ingested(tmp_path: Path, projects: Path, name: str, tail: Tailing) -> dict[str, list[object]]:
    conn = connect(tmp_path / f"{name}.db")
    migrate(conn)
    ingest_roots(conn, [projects], now=NOW, batch_rows=250, tailing=tail)
    out = {t: canonical_rows(conn, t) for t, _ in TABLES}
    out["ingest_checkpoints"] = list(
        conn.execute("SELECT origin, committed_offset, size FROM ingest_checkpoints ORDER BY origin")
    )
    conn.close()
    return out


def test_fitted_batches_project_what_whole_ones_do(tmp_path: Path, corpus: Path) -> None:
    projects = corpus / "claude-projects"
    whole = _ingested(tmp_path, projects, "whole", Tailing())
    fitted_tail = Tailing(txn_budget_s=1e-9, contended=lambda: True)  # every batch over: the floor
    fitted = _ingested(tmp_path, projects, "fitted", fitted_tail)
    assert fitted_tail.rows_limit == TXN_MIN_ROWS
    assert fitted == whole


async def test_the_daemons_hook_writer_tells_its_tailer_when_a_hook_waited(tmp_path: Path, aiohttp_client: Any) -> None:
    db = tmp_path / "d.db"
    app = assemble(ServeConfig(db_path=db, tail=False, schedule=False, watchdog_interval_s=3600))
    client = await aiohttp_client(app, headers=JSON_HEADERS)
    runner = app[TAILER]._ingest
    assert isinstance(runner, IngestRunner)
    assert runner._tailing.txn_budget_s == INGEST_TXN_BUDGET_S
    assert runner._tailing.contended is not None and not runner._tailing.contended()
    body = orjson.dumps({"hook_event_name": "SessionStart", "session_id": SID, "cwd": "/w", "source": "startup"})
    holder = connect(db)  # another writer holds the lock as the hook arrives (the tailer, in the daemon)
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.2, lambda: holder.execute("ROLLBACK")).start()
    assert (await client.post("/hooks", data=body)).status == 200
    holder.close()
    assert app[LOCK_WAITS].recent() and runner._tailing.contended()
