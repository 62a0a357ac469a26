"""The hook writer: the daemon's one write connection for hooks, with group commit.

Hook deliveries (and the watchdog's rows and short reads) reach the write path,
``ingestd.store.writer.apply_isolating``, through here. The event loop never touches SQLite for
writes: it hands the writer either log rows (``submit``) or a callable (``call``: short reads
such as the watchdog's) and awaits an asyncio future. ``ThreadWriter`` is the writer, on a thread
of the daemon: the thread takes everything queued, puts every pending batch of log rows into one ``BEGIN IMMEDIATE``
transaction (one fsync for many concurrent hook deliveries), commits, and only then resolves the
futures: a 2xx means committed. If a grouped transaction fails, each batch is retried alone so one
bad batch cannot sink its neighbours. WAL checkpoints never run on the loop: in ``serve`` the
connection's automatic checkpoint is handed to ``ingestd.store.walcheckpoint`` (its own thread and
connection, off the commit path); this thread adds a passive one when idle.

What the writer runs per grouped transaction (``make_apply``): ``apply_isolating`` bound to a fold
cache that lives as long as the writer, so a hook for a session already seen costs work
proportional to the new rows only.

A failing writer is probed (``probe_loop``): ``Health`` counts the writer as failing from a failed
write until its next success, and only a hook (or a watchdog row) makes a write, so after a full
disk had room again ``/api/health`` would say 503 until some hook happened to arrive. While the
writer is failing, ``probe_loop`` asks the writer itself (its thread, its connection)
every ``interval_s`` to make one small write, and a success clears the failure. The write
(``probe``) inserts and deletes one ``meta`` row in one ``BEGIN IMMEDIATE`` transaction: nothing
changes in the database, yet the commit appends the touched pages to the WAL, which is what a full
disk, a read-only file or an I/O error refuses (a ``BEGIN IMMEDIATE`` / ``ROLLBACK`` alone writes
nothing and succeeds on a full disk).
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
from typing import Any

import apsw

from ingestd.core.records import NewLogRow
from ingestd.core.touch import Ctx
from ingestd.errors import StorageError
from ingestd.http.health import WRITER, Health
from ingestd.http.hooks import HookWriter, Released, WriterClosed, WriterOverloaded
from ingestd.logs import get_logger
from ingestd.store.connection import Db, storage_errors, write_txn
from ingestd.store.identity import identity_in_txn
from ingestd.store.writer import Backoff, FoldCache, apply_batch, apply_isolating

log = get_logger("ingestd.committer")


# Inserts the rows and projects them in ONE ``BEGIN IMMEDIATE`` transaction of its own
# (``ingestd.store.writer.apply_batch``); returns the number of rows actually inserted
# (duplicates skipped). On error nothing of the rows remains.
ApplyFn = Callable[[Db, Sequence[NewLogRow]], int]


@dataclass(slots=True)
class _Rows:
    rows: Sequence[NewLogRow]
    fut: asyncio.Future[int]


@dataclass(slots=True)
class _Call:
    fn: Callable[[Db], Any]
    fut: asyncio.Future[Any]


_STOP = object()


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


class ThreadWriter:
    """Owns the write connection and the thread; see the module docstring.

    Args:
        open_conn: opens (and migrates) the write connection; called on the thread.
        apply: the ``ApplyFn`` run inside each grouped transaction.
        max_group_rows: int, stop draining the queue past this many rows per transaction.
        max_pending: int, queued items beyond which ``submit`` refuses (503).
        health: told when a grouped transaction starts, commits or fails (part ``"writer"``),
            so ``/api/health`` can say the database refuses writes or a commit is stuck.
        between: run on the thread with the connection after each group's answers are posted,
            outside any transaction (the daemon's: ``WalCheckpointer.restart_missed``); a
            ``StorageError`` it raises is ignored.
    """

    def __init__(
        self,
        open_conn: Callable[[], Db],
        apply: ApplyFn,
        *,
        max_group_rows: int = 4000,
        max_pending: int = 20000,
        health: Health | None = None,
        between: Callable[[Db], object] | None = None,
    ) -> None:
        self._open_conn = open_conn
        self._between = between
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
            raise WriterClosed("the writer is stopped")
        if self._pending >= self._max_pending:
            raise WriterOverloaded("the writer queue is full", pending=self._pending)
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
            WriterClosed, WriterOverloaded: refused without trying.
            TimeoutError: not committed within ``timeout_s``.
        """
        assert self._loop is not None
        fut: asyncio.Future[int] = self._loop.create_future()
        try:
            self._enqueue(_Rows(rows, fut))
        except StorageError:
            if released is not None:
                released()  # refused without trying: given back at once
            raise
        return int(await wait_committed(self._loop, fut, timeout_s, released))

    async def call(self, fn: Callable[[Db], Any]) -> Any:
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

    def _process(self, conn: Db, items: list[Any]) -> None:
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
        if self._between is not None and batches:  # answers are posted first: nobody waits on this
            with contextlib.suppress(StorageError):
                self._between(conn)

    def _commit_group(
        self, conn: Db, batches: list[_Rows]
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

    def _idle_checkpoint(self, conn: Db) -> None:
        with contextlib.suppress(StorageError), storage_errors():
            conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)


# Hooks are never retried here: a busy database must answer 503 within the hook timeout.
HOOK_BACKOFF = Backoff(max_attempts=1)


def make_apply(*, ctx: Ctx | None = None) -> ApplyFn:
    """An ``ApplyFn`` over ``apply_isolating`` with its own ``FoldCache``.

    ``ctx`` defaults to the database's identity. The watchdog pass applies the window the log
    records (the daemon logs its own at start, ``ingestd.daemon.main``).
    """
    cache = FoldCache()
    chosen: list[Ctx] = [ctx] if ctx is not None else []

    def store(conn: Db, rows: Sequence[NewLogRow]) -> int:
        if not chosen:
            # Called inside the writer's transaction: the database's identity, so edges
            # the daemon projects match what `ingest` and `replay` project.
            chosen.append(identity_in_txn(conn))
        # a delivery the database refuses is logged and quarantined, never a 500 for the group
        return apply_isolating(
            conn,
            rows,
            component=WRITER,
            backoff=HOOK_BACKOFF,
            ctx=chosen[0],
            cache=cache,
        ).inserted

    return store


def store_rows(conn: Db, rows: Sequence[NewLogRow]) -> int:
    """``apply_batch`` without a shared cache (tests, one-off writes); rows inserted."""
    return apply_batch(conn, rows).inserted


probe_log = get_logger("ingestd.serve")

PROBE_INTERVAL_S = 2.0
PROBE_KEY = "ingestd.write_probe"


def _insert_and_delete(conn: Db) -> None:
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, '')", (PROBE_KEY,))
    conn.execute("DELETE FROM meta WHERE key = ?", (PROBE_KEY,))


def probe(conn: Db) -> None:
    """One committed write on ``conn`` that leaves the database as it was (see the module docstring).

    Raises:
        StorageError: the database refused it (full, read-only, I/O, busy past the timeout).
    """
    write_txn(conn, _insert_and_delete)


async def probe_loop(writer: HookWriter, health: Health, stop: asyncio.Event, interval_s: float | None = None) -> None:
    """Until ``stop``: every ``interval_s`` (default ``PROBE_INTERVAL_S``) while the writer is failing, probe it.

    Side effects: one write through ``writer`` per probe; ``health.ok(WRITER)`` after one succeeds
    (logged once, ``writer_recovered``), unless another write failed while the probe ran (a full
    disk fails every write with the same text, so the failure is compared by identity). A refused
    probe changes nothing (the failure stays). A plain sleep per tick (no task or timer per
    ``wait_for``): the daemon cancels this coroutine when it stops.
    """
    every_s = PROBE_INTERVAL_S if interval_s is None else interval_s
    while not stop.is_set():
        await asyncio.sleep(every_s)
        before = health.failure(WRITER)
        if before is None or stop.is_set():
            continue
        try:
            await writer.call(probe)
        except StorageError:
            continue  # still refused: the failure (and its age) stands
        if health.failure(WRITER) is before:  # no newer failure arrived while the probe ran
            health.ok(WRITER)
            probe_log.info("writer_recovered", was=before.reason)
