"""Runs the ingest code (``ingestd.ingest.backfill.ingest_roots``) for the tailer, off the loop.

The ingest code reads files past their committed offsets, holds back torn tails, detects
rewrites and commits rows with their checkpoints through ``apply_batch``; this module only
gives it a thread and a connection of its own. Why not the hook writer's thread: the
start-up catch-up of a large history can take seconds, and a hook must never wait that
long. With its own connection the ingest commits in short transactions (``batch_rows``)
and the hook writer's group commits slip in between them (SQLite serialises the two
writers; each waits at most one short transaction).

Priority: the reading runs at ``INGEST_NICE`` so that framing a huge file does not take
the event loop's core, but the write transactions (``apply_batch``, the checkpoints, a session's
re-projection) run on a second thread at the daemon's own priority, one at a time while the reading
thread waits. At nice 10 a transaction crawled on a busy machine while holding SQLite's write lock,
and the hook writer's transactions waited behind it until their hooks were answered 503. Linux gives
a new thread its creator's nice value and an unprivileged thread cannot raise its own back, so the
writing thread is started in ``IngestRunner.__init__`` (the event loop's thread), not by the reader.

A change names files: only those are looked at (no walk of the roots), and the fold states
of the sessions being followed live as long as the runner (``FoldCache``), so appending a
line to a long session costs work proportional to that line, not to the session (SPEC §7).

Progress of the daemon's start-up backfill: log lines always, a progress bar on a terminal.

The start-up catch-up of a large history takes seconds (13 s for 287 MB here), and until
it ends the tailer follows nothing new, so the operator is told how far it got: one log line
when it starts (``backfill_started total_bytes``), one every ``LOG_EVERY_S`` seconds
(``backfill_progress bytes total_bytes percent``) and one when it ends (``backfill_finished``).
On a terminal a rich progress bar on stderr shows the same bytes. The callbacks run on the
ingest thread (``IngestRunner``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from ingestd.core.framing import MAX_LINE_BYTES
from ingestd.core.timefmt import from_epoch_ns
from ingestd.core.touch import Ctx
from ingestd.ingest.backfill import ingest_roots
from ingestd.ingest.readfile import Tailing
from ingestd.ingest.summary import Summary
from ingestd.logs import get_logger
from ingestd.store.connection import Db
from ingestd.store.identity import database_identity
from ingestd.store.stall import NO_REPORT, StallReport
from ingestd.store.writer import Backoff, FoldCache

log = get_logger("ingestd.tailer")

# Log rows per tailer transaction: a hook group that finds the lock taken waits for the whole
# transaction (the fold of its rows is inside it), so this bounds a hook's wait during a catch-up.
INGEST_BATCH_ROWS = 250
# Seconds a tailer transaction should take at most while hooks wait for it: on a busy machine 250
# rows took 100 ms and more (a hook's wait for the lock was most of its p99), so the batches shrink
# to fit (``Tailing.txn_budget_s``), and grow back once no hook has waited lately.
INGEST_TXN_BUDGET_S = 0.025
# The daemon never gives up on a transient refusal: it waits (stalled, visibly) until it clears.
TAILER_MAX_WAIT_S = 10.0


# How much lower the reading thread runs than the hook path (Linux: a per-thread nice value).
# Reading a huge file is CPU work between GIL-free reads and hashes; on a busy machine it took
# the core the event loop needed and a hook's p99 rose past 150 ms (bench.framing).
INGEST_NICE = 10


def _lower_priority() -> None:
    """Run the calling (ingest) thread at ``INGEST_NICE``; hooks keep the daemon's priority."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), INGEST_NICE)
    except (OSError, AttributeError) as e:  # not Linux, or not allowed: same priority as before
        log.info("ingest_priority_unchanged", error=repr(e))


def _started() -> None:
    """Nothing: submitted once so that an executor's thread is created by the submitting thread."""


class IngestRunner:
    """A reading thread (``INGEST_NICE``) and a writing thread (the creator's priority) sharing one
    connection; ``await runner(paths)`` ingests.

    Construct it at the daemon's normal priority (the event loop's thread): the writing thread is
    started here and keeps the priority of the thread that started it.

    Args:
        open_conn: opens a migrated connection (called on the worker thread).
        roots: the projects roots.
        clock: ns since the epoch (stamped on the rows as ``received_at``).
        batch_rows: int, log rows per transaction.
        max_line_bytes: int, longer lines are logged as oversized markers.
        report: hears of the ``tailer`` retrying a transient refusal (the daemon's ``Health``).
        contended: whether a hook waited for the lock lately (``LockWaits.recent``): then the
            transactions are fitted to ``INGEST_TXN_BUDGET_S``; None: never.

    The watchdog pass after every transaction applies the window the log records (the daemon
    logs its own at start, ``ingestd.daemon.main``), as on the hook writer.

    A transient refusal (busy, full, I/O) is retried until it clears, with backoff; meanwhile
    the ``tailer`` part is reported stalled to ``report`` (``/api/health``, ``ingestd status``).
    """

    def __init__(
        self,
        open_conn: Callable[[], Db],
        roots: Sequence[Path],
        *,
        clock: Callable[[], int] = time.time_ns,
        batch_rows: int = INGEST_BATCH_ROWS,
        max_line_bytes: int = MAX_LINE_BYTES,
        report: StallReport = NO_REPORT,
        contended: Callable[[], bool] | None = None,
    ) -> None:
        self._open_conn = open_conn
        self._max_line_bytes = max_line_bytes
        self._stopping = threading.Event()
        # the fold cache (worker thread only), the torn tails of the files followed (one pass over
        # an endless line), the retries until a refusal clears, the shutdown flag
        self._tailing = Tailing(
            backoff=Backoff(
                max_s=TAILER_MAX_WAIT_S,
                max_attempts=None,
                wait=self._stopping.wait,
                stop=self._stopping.is_set,
                report=report,
            ),
            should_stop=self._stopping.is_set,
            write=self._write,
            txn_budget_s=None if contended is None else INGEST_TXN_BUDGET_S,
            contended=contended,
        )
        self._roots = [Path(os.path.abspath(r)) for r in roots]
        self._clock = clock
        self._batch_rows = batch_rows
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="ingestd-ingest", initializer=_lower_priority
        )
        # one thread, created now by this thread (an executor starts its threads on submit, from the
        # submitting thread, and they take its nice value): the reader must not be the one to start it
        self._writer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingestd-write")
        self._writer.submit(_started).result()
        self._local = threading.local()
        self._ctx: Ctx | None = None  # the database's identity, read on the worker thread
        self._first_full_scan = True  # the start-up backfill: its progress is shown (BackfillProgress)

    def _conn(self) -> Db:
        conn: Db | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open_conn()
            self._local.conn = conn
            self._ctx = database_identity(conn)
        return conn

    def _write(self, fn: Callable[[], object]) -> object:
        """Run the write ``fn`` on the writing thread and wait for it; returns or raises what it did."""
        return self._writer.submit(fn).result()

    @property
    def cache(self) -> FoldCache:
        """The tailer's fold cache (used by its two threads in turn, never at once)."""
        return self._tailing.cache

    def roots_for(self, paths: Sequence[Path] | None) -> list[Path]:
        """The roots to scan: all of them, or those containing ``paths``."""
        if paths is None:
            return [r for r in self._roots if r.is_dir()]
        out = []
        for r in self._roots:
            if any(Path(os.path.abspath(p)).is_relative_to(r) for p in paths) and r.is_dir():
                out.append(r)
        return out

    def _run(self, paths: Sequence[Path] | None) -> Summary | None:
        roots = self.roots_for(paths)
        if not roots:
            return None
        t0 = time.perf_counter()
        conn = self._conn()
        shown = BackfillProgress() if paths is None and self._first_full_scan else None
        if shown is not None:
            self._first_full_scan = False  # the start-up backfill's bar is shown once
        try:
            summary = ingest_roots(
                conn,
                roots,
                now=from_epoch_ns(self._clock()),
                ctx=self._ctx,
                batch_rows=self._batch_rows,
                paths=paths,
                max_line_bytes=self._max_line_bytes,
                tailing=self._tailing,
                on_total=None if shown is None else shown.on_total,
                progress=None if shown is None else shown.advance,
            )
        finally:
            if shown is not None:
                shown.close()
        if summary.rows_inserted or summary.resets:
            log.info(
                "ingest_committed",
                files_read=summary.files_read,
                rows=summary.rows_inserted,
                resets=summary.resets,
                bytes=summary.bytes,
                elapsed_ms=round((time.perf_counter() - t0) * 1000, 3),
            )
        return summary

    async def __call__(self, paths: Sequence[Path] | None) -> Summary | None:
        """Ingest every root (``None``) or the roots holding ``paths``."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._run, paths)

    def close(self) -> None:
        """Stop the running ingest at its next chunk (what it framed commits), then close the connection."""
        self._stopping.set()

        def _close() -> None:
            conn = getattr(self._local, "conn", None)
            if conn is not None:
                conn.close()
                self._local.conn = None

        self._pool.submit(_close).result()
        self._pool.shutdown(wait=True)
        self._writer.shutdown(wait=True)


LOG_EVERY_S = 5.0


class BackfillProgress:
    """``on_total`` / ``advance`` callbacks for ``ingest_roots``; ``close`` logs the end.

    Args:
        stream: where a progress bar may go (default stderr); only a terminal gets one.
        clock: monotonic seconds (tests pass a fake).
        log_every_s: float, seconds between ``backfill_progress`` log lines.
    """

    def __init__(
        self,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        log_every_s: float = LOG_EVERY_S,
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._every = log_every_s
        self.total_bytes: int | None = None
        self.done_bytes = 0
        self._t0 = clock()
        self._last_log = self._t0
        self._bar: Any = None
        self._task: Any = None

    def on_total(self, n: int) -> None:
        """The bytes the backfill will read (called once, before reading)."""
        self.total_bytes = n
        log.info("backfill_started", total_bytes=n)
        if n and hasattr(self._stream, "isatty") and self._stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

            self._bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                console=Console(file=self._stream),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("start-up backfill", total=n)

    def advance(self, n: int) -> None:
        """``n`` more bytes were read."""
        self.done_bytes += n
        if self._bar is not None:
            self._bar.advance(self._task, n)
        now = self._clock()
        if now - self._last_log >= self._every:
            self._last_log = now
            log.info("backfill_progress", **self._fields())

    def _fields(self) -> dict[str, Any]:
        total = self.total_bytes or 0
        # Files that grew during the backfill are read past the planned total: 100 %, not more.
        pct = min(100.0, round(100.0 * self.done_bytes / total, 1)) if total else 100.0
        return {"bytes": self.done_bytes, "total_bytes": total, "percent": pct}

    def close(self) -> None:
        """Stop the bar (if any) and log ``backfill_finished`` with the elapsed time."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        log.info("backfill_finished", elapsed_s=round(self._clock() - self._t0, 3), **self._fields())
