"""The commit thread (``Committer``): the daemon's only write connection, with group commit.

Not to be confused with ``ingestd.store.writer``, the one write path it calls inside each
grouped transaction. The event loop never touches SQLite for writes. It hands the committer either log rows
(``submit``) or a callable (``call``: short reads such as the watchdog's) and awaits an
asyncio future. The thread takes everything queued, puts every pending batch of log
rows into one ``BEGIN IMMEDIATE`` transaction (one fsync for many concurrent hook
deliveries), commits, and only then resolves the futures: a 2xx means committed.
If a grouped transaction fails, each batch is retried alone so one bad batch cannot
sink its neighbours. WAL checkpoints never run on the loop: in ``serve`` the
connection's automatic checkpoint is handed to ``ingestd.daemon.walcheckpoint`` (its own
thread and connection, off the commit path); this thread adds a passive one when idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import apsw

from ingestd.core.records import NewLogRow
from ingestd.daemon.health import WRITER, Health
from ingestd.errors import StorageError
from ingestd.logs import get_logger
from ingestd.store.connection import storage_errors

log = get_logger("ingestd.committer")


# Inserts the rows and projects them in ONE ``BEGIN IMMEDIATE`` transaction of its own
# (``ingestd.store.writer.apply_batch``); returns the number of rows actually inserted
# (duplicates skipped). On error nothing of the rows remains.
ApplyFn = Callable[[apsw.Connection, Sequence[NewLogRow]], int]


class HookWriter(Protocol):
    """What the daemon's parts need of a writer: ``Committer`` (a thread) or
    ``ingestd.daemon.writerproc.ProcCommitter`` (a process)."""

    committed_rows: int
    committed_batches: int
    committed_deliveries: int

    async def open(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the writer (its thread or process) on ``loop`` and wait, without blocking the loop,
        until its connection is open and migrated.

        Raises:
            StorageError: the database could not be opened or migrated (or the process did not start).
        """

    async def submit(
        self, rows: Sequence[NewLogRow], timeout_s: float | None = None, released: Released | None = None
    ) -> int:
        """Commit ``rows``; the number inserted (see ``Committer.submit``; ``released``: ``wait_committed``)."""

    async def call(self, fn: Callable[[apsw.Connection], Any]) -> Any:
        """Run ``fn(conn)`` where the write connection lives."""

    def stop(self, timeout_s: float = 30.0) -> None:
        """Drain, commit, close."""


class CommitterClosed(StorageError):
    """The writer has stopped (shutdown in progress)."""


class CommitterOverloaded(StorageError):
    """Too much work is queued: answer 503 rather than wait."""


@dataclass(slots=True)
class _Rows:
    rows: Sequence[NewLogRow]
    fut: asyncio.Future[int]


@dataclass(slots=True)
class _Call:
    fn: Callable[[apsw.Connection], Any]
    fut: asyncio.Future[Any]


_STOP = object()


# Told, once, on the loop, that rows a writer was handed are no longer held by it (``wait_committed``).
Released = Callable[[], None]


def _expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError("not committed in time"))


def _relay(waiter: asyncio.Future[Any], fut: asyncio.Future[Any]) -> None:
    if fut.cancelled():
        if not waiter.done():
            waiter.cancel()
        return
    err = fut.exception()  # retrieved here, whether or not a waiter still listens
    if waiter.done():
        return
    if err is not None:
        waiter.set_exception(err)
    else:
        waiter.set_result(fut.result())


async def wait_committed(
    loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any], timeout_s: float | None, released: Released | None
) -> Any:
    """Await a writer's ``fut`` (resolved by the writer alone: committed, refused, or dropped with it).

    Args:
        loop: the event loop.
        fut: the writer's future for one submission.
        timeout_s: give up waiting after this many seconds (``TimeoutError``); ``fut`` is left to
            the writer (the rows may still commit). Cheaper than ``asyncio.wait_for`` (no extra task).
        released: called once, on the loop, when ``fut`` resolves: the rows have left the writer's
            queue, however long after a timeout or a cancelled wait (what they were charged, e.g. the
            hook receiver's in-flight budget, is given back then).

    Raises:
        whatever ``fut`` raises; TimeoutError after ``timeout_s``.
    """
    if released is not None:
        fut.add_done_callback(lambda _f: released())
    if timeout_s is None:
        return await asyncio.shield(fut) if released is not None else await fut
    waiter: asyncio.Future[Any] = loop.create_future()
    fut.add_done_callback(functools.partial(_relay, waiter))
    timer = loop.call_later(timeout_s, _expire, waiter)
    try:
        return await waiter
    finally:
        timer.cancel()


async def enqueue_and_wait(
    loop: asyncio.AbstractEventLoop,
    enqueue: Callable[[], asyncio.Future[Any]],
    timeout_s: float | None,
    released: Released | None,
) -> Any:
    """``enqueue()`` a submission on a writer and ``wait_committed`` for it: the one submit path of
    both writers (``Committer``, ``writerproc.ProcCommitter``).

    Raises:
        StorageError: ``enqueue`` refused it without trying (``released`` is called at once);
        whatever ``wait_committed`` raises.
    """
    try:
        fut = enqueue()
    except StorageError:
        if released is not None:
            released()
        raise
    return await wait_committed(loop, fut, timeout_s, released)


class Committer:
    """Owns the write connection and the thread; see the module docstring.

    Args:
        open_conn: opens (and migrates) the write connection; called on the thread.
        apply: the ``ApplyFn`` run inside each grouped transaction.
        max_group_rows: int, stop draining the queue past this many rows per transaction.
        max_pending: int, queued items beyond which ``submit`` refuses (503).
        health: told when a grouped transaction starts, commits or fails (part ``"writer"``),
            so ``/api/health`` can say the database refuses writes or a commit is stuck.
    """

    def __init__(
        self,
        open_conn: Callable[[], apsw.Connection],
        apply: ApplyFn,
        *,
        max_group_rows: int = 4000,
        max_pending: int = 20000,
        health: Health | None = None,
    ) -> None:
        self._open_conn = open_conn
        self._apply = apply
        self._max_group_rows = max_group_rows
        self._max_pending = max_pending
        self._health = health if health is not None else Health()
        self._q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._pending = 0
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._open_error: BaseException | None = None
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.committed_rows = 0
        self.committed_batches = 0  # transactions
        self.committed_deliveries = 0  # submissions they carried

    # -- lifecycle ---------------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the thread and open the connection on it.

        Raises:
            StorageError: the connection could not be opened or migrated.
        """
        self._loop = loop
        self._thread = threading.Thread(target=self._run, name="ingestd-commit", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._open_error is not None:
            raise self._open_error

    async def open(self, loop: asyncio.AbstractEventLoop) -> None:
        """``start`` off the loop (the thread opens and migrates the connection meanwhile: a migration
        can take seconds, and the loop keeps serving). Raises as ``start``."""
        await loop.run_in_executor(None, self.start, loop)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Refuse new work, drain what is queued (committing it), close the connection."""
        if self._thread is None:
            return
        self._closed = True
        self._q.put(_STOP)
        self._thread.join(timeout_s)
        self._thread = None

    # -- submitting (loop side) -------------------------------------------------------
    def _enqueue(self, item: Any) -> None:
        if self._closed or self._thread is None:
            raise CommitterClosed("the writer is stopped")
        if self._pending >= self._max_pending:
            raise CommitterOverloaded("the writer queue is full", pending=self._pending)
        self._pending += 1
        self._q.put(item)

    async def submit(
        self, rows: Sequence[NewLogRow], timeout_s: float | None = None, released: Released | None = None
    ) -> int:
        """Commit ``rows`` (grouped with concurrent submissions); the number inserted.

        Args:
            rows: the log rows.
            timeout_s: give up waiting after this many seconds (``TimeoutError``); the rows
                may still commit later.
            released: called once, on the loop, when the rows leave the queue (``wait_committed``);
                at once when they are refused without trying.

        Raises:
            StorageError: the transaction failed (nothing of these rows was written).
            CommitterClosed, CommitterOverloaded: refused without trying.
            TimeoutError: not committed within ``timeout_s``.
        """
        assert self._loop is not None
        loop = self._loop

        def enqueue() -> asyncio.Future[int]:
            fut: asyncio.Future[int] = loop.create_future()
            self._enqueue(_Rows(rows, fut))
            return fut

        return int(await enqueue_and_wait(loop, enqueue, timeout_s, released))

    async def call(self, fn: Callable[[apsw.Connection], Any]) -> Any:
        """Run ``fn(conn)`` on the writer thread (it manages its own transactions)."""
        assert self._loop is not None
        fut: asyncio.Future[Any] = self._loop.create_future()
        self._enqueue(_Call(fn, fut))
        return await fut

    # -- the thread --------------------------------------------------------------------
    def _resolve(self, done: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
        self._pending -= len(done)
        for fut, value, err in done:
            if fut.done():
                continue
            if err is not None:
                fut.set_exception(err)
            else:
                fut.set_result(value)

    def _post(self, done: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # loop already closed at shutdown
            self._loop.call_soon_threadsafe(self._resolve, done)

    def _run(self) -> None:
        try:
            conn = self._open_conn()
        except BaseException as e:
            self._open_error = e
            self._ready.set()
            return
        self._ready.set()
        stopping = False
        try:
            while not stopping:
                try:
                    first = self._q.get(timeout=1.0)
                except queue.Empty:
                    self._idle_checkpoint(conn)
                    continue
                items = [first]
                nrows = len(first.rows) if isinstance(first, _Rows) else 0
                while nrows < self._max_group_rows:
                    try:
                        nxt = self._q.get_nowait()
                    except queue.Empty:
                        break
                    items.append(nxt)
                    if isinstance(nxt, _Rows):
                        nrows += len(nxt.rows)
                if any(it is _STOP for it in items):
                    stopping = True
                    # drain what raced in before the flag was seen
                    while True:
                        try:
                            items.append(self._q.get_nowait())
                        except queue.Empty:
                            break
                    items = [it for it in items if it is not _STOP]
                self._process(conn, items)
        finally:
            with contextlib.suppress(apsw.Error):
                conn.close()

    def _process(self, conn: apsw.Connection, items: list[Any]) -> None:
        batches = [it for it in items if isinstance(it, _Rows)]
        done: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        if batches:
            done.extend(self._commit_group(conn, batches))
        for it in items:
            if isinstance(it, _Call):
                try:
                    done.append((it.fut, it.fn(conn), None))
                except BaseException as e:
                    done.append((it.fut, None, e))
        if done:
            self._post(done)

    def _commit_group(
        self, conn: apsw.Connection, batches: list[_Rows]
    ) -> list[tuple[asyncio.Future[Any], Any, BaseException | None]]:
        t0 = time.perf_counter()
        rows = [r for b in batches for r in b.rows]
        self._health.busy(WRITER)
        try:
            inserted = self._apply(conn, rows)
        except Exception as e:
            if len(batches) > 1:
                return [d for b in batches for d in self._commit_group(conn, [b])]
            storage = isinstance(e, StorageError)
            self._health.failed(WRITER, f"the last write failed: {e}")
            log.error("batch_failed", rows=len(rows), error=str(e) if storage else repr(e))
            err = e if storage else StorageError(f"projection failed: {e}", cause=type(e).__name__)
            return [(batches[0].fut, None, err)]
        self._health.ok(WRITER)
        self.committed_rows += inserted
        self.committed_batches += 1
        self.committed_deliveries += len(batches)
        log.info(
            "batch_committed",
            rows=len(rows),
            inserted=inserted,
            deliveries=len(batches),
            elapsed_ms=round((time.perf_counter() - t0) * 1000, 3),
        )
        # Every delivery in the group learns how many rows the group inserted in total;
        # callers only rely on "committed".
        return [(b.fut, inserted, None) for b in batches]

    def _idle_checkpoint(self, conn: apsw.Connection) -> None:
        with contextlib.suppress(StorageError), storage_errors():
            conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
