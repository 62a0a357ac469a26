"""WAL checkpoints off the commit path: the write connection never checkpoints inside a commit, and
the WAL still starts over under a writer that never pauses."""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

from ingestd.core.records import NewLogRow
from ingestd.daemon import hookwriter, root
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.hookwriter import ThreadWriter
from ingestd.daemon.root import assemble
from ingestd.http.health import Health
from ingestd.store import walcheckpoint
from ingestd.store.connection import Db, connect, poll_when_busy
from ingestd.store.migrate import migrate
from ingestd.store.walcheckpoint import RESTART_FACTOR, WalCheckpointer, WalSize
from ingestd.store.writer import apply_batch
from tests.hookclient import JSON_HEADERS
from tests.support import wait_for


def _rows(start: int, n: int) -> list[NewLogRow]:
    # 2 KB of random hex each: payloads are stored compressed (migration 0013), and these must
    # still take WAL pages
    return [
        NewLogRow(
            f"k{i}",
            "hook",
            "Stop",
            b'{"pad":"' + random.Random(i).randbytes(1000).hex().encode() + b'"}',
            "2026-01-01T00:00:00.000Z",
            f"s{i % 5}",
            "hook",
        )
        for i in range(start, start + n)
    ]


def test_commits_leave_checkpoints_to_the_thread(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    cp = WalCheckpointer(lambda: connect(db), wal_pages=50)
    conn = cp.attach(migrate_conn(db))
    wal = Path(str(db) + "-wal")
    # nobody checkpoints yet: the WAL only grows past SQLite's own threshold's worth of pages
    written = 0
    while os.path.getsize(wal) <= 1000 * 4096:
        assert written < 20_000, "the WAL never grew past 1000 pages"
        apply_batch(conn, _rows(written, 100))
        written += 100
    cp.start()  # the WAL hook has signalled it meanwhile
    try:
        # with no write running, it copies every frame
        wait_for("a checkpoint of the whole WAL", lambda: cp.last is not None and cp.last[0] == cp.last[1] > 1000, 10)
        # everything was copied: the next write starts the WAL over from its beginning
        apply_batch(conn, _rows(10**6, 1))
        frames = int(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0][1])
        assert frames < 100
    finally:
        cp.stop()
        conn.close()
    check = Db(str(db))
    assert check.execute("SELECT count(*) FROM events_raw").fetchall() == [(written + 1,)]


def migrate_conn(db: Path) -> apsw.Connection:
    conn = connect(db)
    migrate(conn)
    return conn


def test_a_writer_that_never_pauses_still_starts_the_wal_over(tmp_path: Path) -> None:
    """Back-to-back transactions and no checkpoint of the thread's ending between two of them (here
    the thread never runs): ``restart_missed`` between transactions copies the WAL once it reaches
    ``RESTART_FACTOR`` times the threshold, and the next transaction starts it over. Without it
    the WAL only grows."""
    db = tmp_path / "c.db"
    cp = WalCheckpointer(lambda: connect(db), wal_pages=50)
    for restart in (False, True):
        conn = cp.attach(migrate_conn(db))
        size = conn.state(WalSize)
        peak = total = 0
        try:
            for i in range(60):
                before = size.pages
                apply_batch(conn, _rows(i * 10 + (10**5 if restart else 0), 10))
                total += size.pages - before if size.pages > before else size.pages
                peak = max(peak, size.pages)
                if restart:
                    cp.restart_missed(conn)
        finally:
            conn.close()  # closing checkpoints the whole WAL and deletes it: the next round starts empty
        assert total > 20 * 50  # both rounds wrote twenty thresholds' worth of pages
        if restart:
            assert peak < (RESTART_FACTOR + 1) * 50
        else:
            assert peak == total  # never started over


async def test_the_daemon_writer_runs_its_between_step_after_each_group(tmp_path: Path) -> None:
    """``ThreadWriter(between=...)`` calls it on the writer's connection after each committed group,
    outside the transaction (so ``restart_missed`` can checkpoint there)."""
    db = tmp_path / "w.db"
    seen: list[bool] = []
    w = ThreadWriter(lambda: migrate_conn(db), hookwriter.store_rows, between=lambda c: seen.append(c.in_transaction))
    w.start(asyncio.get_running_loop())
    try:
        for i in range(3):
            await w.submit(_rows(i, 1))
    finally:
        w.stop()
    assert seen == [False, False, False]


async def test_the_daemon_starts_its_wal_over_under_steady_hooks(
    tmp_path: Path, aiohttp_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hooks from eight clients, group after group: with a checkpoint thread that never gets in
    between two transactions (here it never runs), the writer's own step still keeps the WAL
    within a few thresholds."""

    class Idle(WalCheckpointer):
        def __init__(self, open_conn: Any) -> None:
            super().__init__(open_conn, wal_pages=20)

        def start(self) -> None:
            pass

    monkeypatch.setattr(root, "WalCheckpointer", Idle)
    cfg = ServeConfig(db_path=tmp_path / "c.db", tail=False, schedule=False, watchdog_interval_s=3600)
    client = await aiohttp_client(assemble(cfg), headers=JSON_HEADERS)

    async def post(i: int) -> None:
        body = {"hook_event_name": "PreToolUse", "session_id": f"s{i % 8}", "tool_name": "Bash"}
        resp = await client.post("/hooks", data=orjson.dumps({**body, "tool_use_id": f"toolu_{i}"}))
        assert resp.status == 200

    for r in range(40):
        await asyncio.gather(*(post(r * 8 + j) for j in range(8)))
    conn = connect(cfg.db_path)  # a checkpoint needs a connection that can write
    try:
        [(_busy, frames, _copied)] = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    finally:
        conn.close()
    # it started over at RESTART_FACTOR thresholds at most a group ago; without the step, every
    # frame of the 320 deliveries would still be there
    assert frames < (RESTART_FACTOR + 2) * 20


def test_a_daemon_writer_takes_a_freed_lock_within_milliseconds(tmp_path: Path) -> None:
    """The daemon's write connections try a held lock again every millisecond: one waiting on a
    250 ms transaction of another writer begins just after it commits (SQLite's own busy handler,
    sleeping 25-100 ms between its later tries, began some 75 ms after), and one waiting past the
    timeout gets ``BusyError``."""
    db = tmp_path / "w.db"
    holder = migrate_conn(db)
    waiter = root._open_write_conn(db, None, Health())
    released: list[float] = []

    def hold() -> None:
        holder.execute("BEGIN IMMEDIATE")
        started.set()
        time.sleep(0.25)
        holder.execute("COMMIT")
        released.append(time.monotonic())

    started = threading.Event()
    t = threading.Thread(target=hold)
    t.start()
    started.wait(5)
    waiter.execute("BEGIN IMMEDIATE")
    began = time.monotonic()
    waiter.execute("COMMIT")
    t.join()
    assert 0 <= began - released[0] < 0.04
    poll_when_busy(waiter, timeout_ms=50)
    holder.execute("BEGIN IMMEDIATE")
    try:
        t0 = time.monotonic()
        with pytest.raises(apsw.BusyError):
            waiter.execute("BEGIN IMMEDIATE")
        assert 0.05 <= time.monotonic() - t0 < 1.0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        waiter.close()


def test_a_failing_restart_checkpoint_is_logged_once_until_one_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint that fails for a reason other than busy (a full disk) is logged once, not after
    every group, and logged again only after one has succeeded."""
    db = tmp_path / "c.db"
    cp = WalCheckpointer(lambda: connect(db), wal_pages=50)
    conn = cp.attach(migrate_conn(db))
    errors: list[str] = []
    monkeypatch.setattr(walcheckpoint.log, "error", lambda event, **kw: errors.append(event))
    try:
        conn.state(WalSize).pages = 10**6
        real = conn.wal_checkpoint
        monkeypatch.setattr(conn, "wal_checkpoint", lambda **kw: (_ for _ in ()).throw(apsw.FullError("full")))
        assert [cp.restart_missed(conn) for _ in range(3)] == [False, False, False]
        assert errors == ["checkpoint_failed"]
        monkeypatch.setattr(conn, "wal_checkpoint", real)
        assert cp.restart_missed(conn) is True
        conn.state(WalSize).pages = 10**6
        monkeypatch.setattr(conn, "wal_checkpoint", lambda **kw: (_ for _ in ()).throw(apsw.FullError("full")))
        assert cp.restart_missed(conn) is False
        assert errors == ["checkpoint_failed", "checkpoint_failed"]
    finally:
        monkeypatch.undo()
        conn.close()
