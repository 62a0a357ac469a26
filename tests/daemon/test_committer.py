"""The writer thread: group commit, failure isolation, drain on stop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import apsw
import pytest

from ingestd.core.records import NewLogRow
from ingestd.daemon import hookwriter
from ingestd.daemon.hookwriter import ThreadWriter, wait_committed
from ingestd.errors import StorageError
from ingestd.http.hooks import WriterClosed
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.support import log_rows


def _row(key: str, session: str = "s") -> NewLogRow:
    return NewLogRow(key, "hook", "Stop", b"{}", "2026-01-01T00:00:00.000Z", session, "hook")


def _open(db: Path) -> apsw.Connection:
    conn = connect(db)
    migrate(conn)
    return conn


async def test_concurrent_submissions_share_transactions(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    gate = threading.Event()
    calls: list[int] = []

    def apply(conn: apsw.Connection, rows: Sequence[NewLogRow]) -> int:
        gate.wait(5)  # hold the first transaction so the rest queue up behind it
        calls.append(len(rows))
        return hookwriter.store_rows(conn, rows)

    w = ThreadWriter(lambda: _open(db), apply)
    w.start(asyncio.get_running_loop())
    tasks = [asyncio.create_task(w.submit([_row(f"k{i}")])) for i in range(200)]
    await asyncio.sleep(0)
    gate.set()
    await asyncio.gather(*tasks)
    w.stop()
    assert log_rows(db) == 200
    assert sum(calls) == 200
    assert len(calls) < 20  # grouped: far fewer transactions than deliveries


@pytest.mark.parametrize("error", [StorageError("refused"), ValueError("a projector bug")], ids=["storage", "other"])
async def test_a_failing_batch_does_not_sink_its_neighbours(tmp_path: Path, error: Exception) -> None:
    db = tmp_path / "w.db"
    gate = threading.Event()

    def apply(conn: apsw.Connection, rows: Sequence[NewLogRow]) -> int:
        gate.wait(5)
        if any(r.session_id == "poison" for r in rows):
            raise error
        return hookwriter.store_rows(conn, rows)

    w = ThreadWriter(lambda: _open(db), apply)
    w.start(asyncio.get_running_loop())
    good = [asyncio.create_task(w.submit([_row(f"g{i}")])) for i in range(5)]
    bad = asyncio.create_task(w.submit([_row("p", "poison")]))
    await asyncio.sleep(0)
    gate.set()
    await asyncio.gather(*good)
    with pytest.raises(StorageError):
        await bad
    w.stop()
    assert log_rows(db) == 5


async def test_stop_drains_queued_work_then_refuses(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    w = ThreadWriter(lambda: _open(db), hookwriter.store_rows)
    w.start(asyncio.get_running_loop())
    tasks = [asyncio.create_task(w.submit([_row(f"k{i}")])) for i in range(50)]
    await asyncio.sleep(0)
    await asyncio.get_running_loop().run_in_executor(None, w.stop)
    await asyncio.gather(*tasks)
    assert log_rows(db) == 50
    with pytest.raises(WriterClosed):
        await w.submit([_row("late")])


async def test_duplicate_keys_insert_once(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    w = ThreadWriter(lambda: _open(db), hookwriter.store_rows)
    w.start(asyncio.get_running_loop())
    await asyncio.gather(*(w.submit([_row("same")]) for _ in range(10)))
    w.stop()
    assert log_rows(db) == 1


async def test_open_lets_the_loop_run_while_the_connection_opens(tmp_path: Path) -> None:
    """``HookWriter.open``: the thread writer opens (and migrates) its connection while the loop
    keeps serving; a database it cannot open still fails the open."""
    db = tmp_path / "w.db"
    opening = threading.Event()
    release = threading.Event()

    def slow_open() -> apsw.Connection:
        opening.set()
        release.wait(5)  # a long migration
        return _open(db)

    loop = asyncio.get_running_loop()
    w = ThreadWriter(slow_open, hookwriter.store_rows)
    opened = asyncio.create_task(w.open(loop))
    for _ in range(200):  # the loop turns while the thread opens
        if opening.is_set():
            break
        await asyncio.sleep(0.01)
    assert opening.is_set() and not opened.done()
    release.set()
    await opened
    assert await w.submit([_row("k-open")]) == 1
    w.stop()

    def refuse() -> apsw.Connection:
        raise StorageError("cannot open for the test")

    with pytest.raises(StorageError, match="cannot open for the test"):
        await ThreadWriter(refuse, hookwriter.store_rows).open(loop)


@pytest.mark.parametrize("outcome", ["committed", "refused", "cancelled wait"])
async def test_wait_committed_releases_when_the_writer_answers_not_at_the_timeout(outcome: str) -> None:
    # the hook receiver gives a body's in-flight charge back on ``released``: a 503 timeout (or a
    # client gone) leaves the row in the writer's queue, so the charge must outlive the wait
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[int] = loop.create_future()
    released: list[bool] = []
    waiting = asyncio.ensure_future(wait_committed(loop, fut, 0.05, lambda: released.append(True)))
    if outcome == "cancelled wait":
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    else:
        with pytest.raises(TimeoutError):
            await waiting
    assert not fut.done() and released == []  # the writer still holds the row
    if outcome == "refused":
        fut.set_exception(StorageError("refused"))  # retrieved by wait_committed: no warning
    else:
        fut.set_result(1)
    await asyncio.sleep(0)
    assert released == [True]


async def test_wait_committed_passes_the_answer_on() -> None:
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[int] = loop.create_future()
    loop.call_soon(fut.set_result, 7)
    assert await wait_committed(loop, fut, 5.0, None) == 7
    fut2: asyncio.Future[int] = loop.create_future()
    loop.call_soon(fut2.set_exception, StorageError("no"))
    with pytest.raises(StorageError, match="no"):
        await wait_committed(loop, fut2, None, lambda: None)
