"""The hook writer in a process of its own (``ProcessWriter``): the event loop keeps one core for HTTP.

In the thread ``ThreadWriter`` the writer and the event loop share one GIL: every SQLite call
releases it and must win it back from the loop (a millisecond each under load), so a grouped
transaction of a few hook deliveries took several times its CPU in wall time. ``ProcessWriter``
has the same face (``submit``, ``call``, ``stop``, the counters) and hands the rows to a writer
process (``ingestd.daemon.writerchild``) over a socket pair read and written by the event loop
itself: every delivery queued in one turn of the loop travels in one frame, the process groups
every frame that arrived into one transaction, and a future resolves only when the process says
its transaction committed (a 2xx still means on disk).

When the process dies (killed, out of memory): every delivery still waiting is answered at once
with ``WriterClosed`` (503), ``/api/health`` names the writer as failing, new deliveries get
503 until a new process is ready (after ``restart_delay_s``); then health clears. Nothing
acknowledged is lost: only committed rows were acknowledged. The processes come from a
``forkserver`` (one fork of a clean interpreter that has imported the writer's modules), never a
fork of the daemon with its threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import pickle
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ingestd.core.records import NewLogRow
from ingestd.daemon import writerchild as child
from ingestd.daemon.hookwriter import ApplyFn, enqueue_and_wait
from ingestd.errors import StorageError
from ingestd.http.health import WRITER, Health
from ingestd.http.hooks import Released, WriterClosed, WriterOverloaded
from ingestd.logs import get_logger

log = get_logger("ingestd.writerproc")

_CTX = multiprocessing.get_context("forkserver")
_CTX.set_forkserver_preload(
    ["ingestd.daemon.forkserverinit", "ingestd.daemon.writerchild", "ingestd.daemon.hookwriter"]
)
START_TIMEOUT_S = 120.0
# A writer that dies or fails to start again and again is retried less and less often: the delay
# doubles up to this cap, and falls back to ``restart_delay_s`` once a process has lived this long.
RESTART_MAX_DELAY_S = 30.0


def _handshake(sock: socket.socket, timeout_s: float) -> None:
    """Wait for the child's first frame. Raises StorageError unless it says READY."""
    reader = child.FrameReader()
    sock.settimeout(timeout_s)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                raise StorageError("the writer process exited while starting")
            frames = reader.feed(data)
            if frames:
                break
    except TimeoutError:
        raise StorageError(f"the writer process did not start within {timeout_s:.0f} s") from None
    if frames[0] != child.READY:
        raise StorageError(f"the writer process could not open the database: {frames[0][1]}")


class _Link(asyncio.Protocol):
    """The loop's end of the socket pair: replies in, end of the process noticed."""

    def __init__(self, owner: ProcessWriter) -> None:
        self._owner = owner
        self._reader = child.FrameReader()

    def data_received(self, data: bytes) -> None:
        for results, groups in self._reader.feed(data):
            self._owner._replied(results, groups)

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._lost(self)


class ProcessWriter:
    """The hook writer as a process; see the module docstring.

    Args:
        db_path: the database the process opens (and migrates).
        make_apply: builds the ``ApplyFn`` inside the process (module-level, it is pickled);
            default ``ingestd.daemon.hookwriter.make_apply``.
        max_group_rows: int, rows per grouped transaction at most.
        max_pending: int, deliveries waiting beyond which ``submit`` refuses (503).
        health: told busy / ok / failed (part ``"writer"``), and failed when the process dies.
        log_level: the process logs at this level.
        restart_delay_s: float, seconds between the end of a process and the start of the next.
    """

    def __init__(
        self,
        db_path: Path,
        *,
        make_apply: Callable[[], ApplyFn] | None = None,
        max_group_rows: int = 4000,
        max_pending: int = 20000,
        health: Health | None = None,
        log_level: str = "info",
        restart_delay_s: float = 1.0,
    ) -> None:
        if make_apply is None:
            from ingestd.daemon.hookwriter import make_apply

            make_apply = make_apply
        self._db_path = db_path
        self._make_apply = make_apply
        self._max_group_rows = max_group_rows
        self._max_pending = max_pending
        self._health = health if health is not None else Health()
        self._log_level = log_level
        self._restart_delay_s = restart_delay_s
        self._delay_s = restart_delay_s  # the next restart's (``_next_delay``)
        self._started_at = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proc: Any = None
        self._transport: asyncio.Transport | None = None
        self._link: _Link | None = None
        self._futs: dict[int, asyncio.Future[Any]] = {}
        self._calls: set[int] = set()  # ids of ``call``s waiting: their results come back pickled
        self._outbox: list[Any] = []
        self._ids = itertools.count()
        self._stopping = False
        self._restart: asyncio.Task[None] | None = None
        # a process that ended before its exit code was known, and the deliveries it left waiting:
        # said by the restart once reaped, or by ``stop`` when the stop cancels that restart
        self._unreaped: tuple[Any, int] | None = None
        self.committed_rows = 0
        self.committed_batches = 0  # transactions
        self.committed_deliveries = 0  # submissions they carried
        self.restarts = 0

    @property
    def pid(self) -> int | None:
        """The writer process's pid (None while none runs)."""
        return self._proc.pid if self._proc is not None and self._transport is not None else None

    # -- lifecycle ---------------------------------------------------------------------
    async def open(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the writer process and wait until it has opened (and migrated) the database.

        Raises:
            StorageError: the process could not open the database or did not start in time.
        """
        self._loop = loop
        await self._spawn()

    async def _spawn(self) -> None:
        assert self._loop is not None
        mine, theirs = socket.socketpair()
        args = (theirs, str(self._db_path), self._make_apply, self._max_group_rows, self._log_level)
        proc = _CTX.Process(target=child.main, args=args, name="ingestd-writer", daemon=True)
        try:
            await self._loop.run_in_executor(None, proc.start)
            theirs.close()
            await self._loop.run_in_executor(None, _handshake, mine, START_TIMEOUT_S)
        except BaseException:
            theirs.close()
            mine.close()
            with contextlib.suppress(Exception):
                proc.kill()
            raise
        mine.setblocking(False)
        self._proc = proc
        self._transport, self._link = await self._loop.create_unix_connection(lambda: _Link(self), sock=mine)
        self._started_at = time.monotonic()
        log.info("writer_process_started", pid=proc.pid)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Refuse new work, let the process commit what it was sent, wait for it to exit.

        Blocks up to ``timeout_s`` (twice): call it from a thread other than the loop's (the daemon:
        ``run_in_executor``), while the loop runs, so the loop can send the STOP and read the last replies.

        Raises:
            RuntimeError: called on the loop's own thread (it would block the loop it waits for).
        """
        if self._loop is None or self._stopping:
            return
        if _running_loop() is self._loop:
            raise RuntimeError("ProcessWriter.stop blocks: call it off the event loop (run_in_executor)")
        self._stopping = True
        with contextlib.suppress(RuntimeError):  # the loop is closed already
            self._loop.call_soon_threadsafe(self._send_stop)
        self._reap_now(timeout_s)
        proc = self._proc
        if proc is not None:
            proc.join(timeout_s)
            if proc.is_alive():
                log.error("writer_process_kill", pid=proc.pid, after_s=timeout_s)
                proc.kill()
                proc.join()
            _said_stopped(proc.exitcode)
        # let the loop read the last replies and the end of the stream, then close
        with contextlib.suppress(RuntimeError, TimeoutError):
            asyncio.run_coroutine_threadsafe(self._closed(), self._loop).result(timeout_s)

    async def _closed(self) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):
                while self._transport is not None:
                    await asyncio.sleep(0.01)
        if self._transport is not None:
            self._transport.close()

    def _send_stop(self) -> None:
        if self._restart is not None:
            self._restart.cancel()
        self._outbox.append((child.STOP,))
        self._flush()

    # -- submitting (loop side) -------------------------------------------------------
    def _enqueue(self, item: tuple[int, int, Any]) -> asyncio.Future[Any]:
        if self._stopping or self._transport is None or self._loop is None:
            raise WriterClosed("the writer is stopped")
        if len(self._futs) >= self._max_pending:
            raise WriterOverloaded("the writer queue is full", pending=len(self._futs))
        fut: asyncio.Future[Any] = self._loop.create_future()
        self._futs[item[1]] = fut
        if not self._outbox:
            self._loop.call_soon(self._flush)
        self._outbox.append(item)
        return fut

    async def submit(
        self, rows: Sequence[NewLogRow], timeout_s: float | None = None, released: Released | None = None
    ) -> int:
        """Commit ``rows`` (grouped with concurrent submissions); the number inserted.

        ``released`` is called once, on the loop, when the rows leave the queue: the process answered
        for them or ended (``hookwriter.wait_committed``); at once when they are refused without trying.

        Raises:
            StorageError: the transaction failed (nothing of these rows was written).
            WriterClosed: stopped, or the process is gone (a new one is starting).
            WriterOverloaded: too much is waiting.
            TimeoutError: not committed within ``timeout_s`` (the rows may still commit).
        """
        assert self._loop is not None

        def enqueue() -> asyncio.Future[Any]:
            return self._enqueue((child.ROWS, next(self._ids), [child.wire_row(r) for r in rows]))

        return int(await enqueue_and_wait(self._loop, enqueue, timeout_s, released))

    async def call(self, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn(conn)`` in the writer process (``fn`` and its result are pickled).

        Raises:
            TypeError: ``fn`` cannot be pickled (a lambda, a local function: use a module-level
                function or a ``functools.partial`` of one).
            StorageError: ``fn`` raised or its result cannot be pickled (the message), or as ``submit``.
        """
        try:
            blob = pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)  # once: the frame carries these bytes
        except (pickle.PicklingError, AttributeError, TypeError) as e:
            raise TypeError(f"the writer process cannot run {fn!r}: {e}") from e
        i = next(self._ids)
        fut = self._enqueue((child.CALL, i, blob))
        self._calls.add(i)
        return await fut

    def _flush(self) -> None:
        if not self._outbox or self._transport is None:
            return
        items, self._outbox = self._outbox, []
        if any(it[0] == child.ROWS for it in items):
            self._health.busy(WRITER)
        self._transport.write(child.frame(items))

    # -- replies and the end of a process (loop side) -----------------------------------
    def _replied(self, results: list[child.Result], groups: list[tuple[int, int]]) -> None:
        failure = None
        for i, ok, value in results:
            fut = self._futs.pop(i, None)
            if ok:
                if i in self._calls:
                    self._calls.discard(i)
                    value = pickle.loads(value)
                if fut is not None and not fut.done():
                    fut.set_result(value)
                continue
            self._calls.discard(i)
            cause, failure, storage = value
            if fut is not None and not fut.done():  # the words of the thread ThreadWriter
                fut.set_exception(StorageError(failure if storage else f"projection failed: {failure}", cause=cause))
        for inserted, deliveries in groups:
            self.committed_rows += inserted
            self.committed_batches += 1
            self.committed_deliveries += deliveries
        if failure is not None:
            self._health.failed(WRITER, f"the last write failed: {failure}")
        elif groups:
            self._health.ok(WRITER)

    def _lost(self, link: _Link) -> None:
        if link is not self._link:
            return
        self._transport = self._link = None
        proc, self._proc = self._proc, None
        waiting = [f for f in self._futs.values() if not f.done()]
        self._futs.clear()
        self._calls.clear()
        self._outbox.clear()
        for f in waiting:
            f.set_exception(WriterClosed("the writer process exited; retry later"))
        if self._stopping:
            return
        self._health.failed(WRITER, "the writer process exited; restarting")
        assert self._loop is not None
        self._note_exit(time.monotonic() - self._started_at)
        code = None if proc is None else proc.exitcode  # without waiting (waitpid WNOHANG)
        if code is not None or proc is None:
            self._said_exited(code, len(waiting))
        else:
            self._unreaped = (proc, len(waiting))
        self._restart = self._loop.create_task(self._respawn())

    def _note_exit(self, lived_s: float) -> None:
        """A process that lived ``RESTART_MAX_DELAY_S`` or more was healthy: restarts begin anew at
        ``restart_delay_s``; one that died sooner keeps the backed-off delay (``_next_delay``)."""
        if lived_s >= RESTART_MAX_DELAY_S:
            self._delay_s = self._restart_delay_s

    def _next_delay(self) -> float:
        """The delay before this restart; the one after doubles (capped), until a process lives."""
        delay = self._delay_s
        self._delay_s = min(delay * 2, RESTART_MAX_DELAY_S)
        return delay

    def _said_exited(self, code: int | None, waiting: int) -> None:
        """Say that the process ended unasked (``writer_process_exited``, error) and why in health."""
        log.error("writer_process_exited", exit_code=code, waiting=waiting)
        self._health.failed(WRITER, f"the writer process exited (exit code {code}); restarting")

    async def _reap(self) -> None:
        """Wait (off the loop: up to a second) for an ended process's exit code, and say it."""
        assert self._loop is not None
        if self._unreaped is not None:
            await self._loop.run_in_executor(None, self._unreaped[0].join, 1.0)
            self._reap_now(None)

    def _reap_now(self, timeout_s: float | None) -> None:
        """Say the exit of a process not yet reaped, once; joined first up to ``timeout_s`` (None: it was)."""
        dead, self._unreaped = self._unreaped, None
        if dead is not None:
            if timeout_s is not None:
                dead[0].join(timeout_s)
            self._said_exited(dead[0].exitcode, dead[1])

    async def _respawn(self) -> None:
        await self._reap()
        while not self._stopping:
            await asyncio.sleep(self._next_delay())
            try:
                await self._spawn()
            except StorageError as e:
                log.error("writer_process_restart_failed", error=str(e))
                self._health.failed(WRITER, f"the writer process could not restart: {e}")
                continue
            self.restarts += 1
            self._health.ok(WRITER)
            log.warning("writer_process_restarted", restarts=self.restarts)
            return


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running on this thread, if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _said_stopped(code: int | None) -> None:
    """A writer process that ended because the daemon stops: info when it exited 0, else a warning."""
    if code == 0:
        log.info("writer_process_stopped", exit_code=code)
    else:
        log.warning("writer_process_stopped", exit_code=code)
