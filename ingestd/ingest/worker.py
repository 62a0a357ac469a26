"""Reading, and folding ahead, in a worker process while this one writes (issue 14: both cores).

A pipelined ingest (``ingestd.ingest.pipeline``) runs its reading and its writing on two threads
of one process, so their Python shares one GIL. ``ReaderProcess`` moves the reading (opening,
framing, decoding, keying: ``readfile.read_plans``, unchanged) into a forked process; the batches
come back over a pipe and are applied by this process's writer thread as before.

Folding ahead: when the log was empty (a first backfill: every session starts from nothing), the
worker also folds each batch as ``writer.apply_batch`` would once its rows are logged under the
predicted ids (the ids past the earlier batches', in row order) and sends the projection rows
(``writer.Prefold``). The writer checks, inside its transaction, that every row went in at exactly
those ids; then it writes those rows instead of folding, else it folds itself and refuses every
later prefold of the run (``PrefoldGate``: the worker's states assumed the refused ids). A
concurrent writer (the daemon) moves the ids and is caught there. The worker keeps at most
``PREFOLD_STATES`` states (c1000 grew it to 200 MiB and rising when every state was kept); a
session it has no state for (one coming back after its state was evicted: c1000 has two, a
resumed session's copy; or one whose fold needs the session's log, a refold) is left to the
writer for the rest of the run: the prefold names it in its place and the writer folds it there
from the log, as it would without a worker, so the writing process keeps only those sessions'
states and decodes only their rows. A projector error ends folding ahead for the run.

What crosses the pipe: each batch's rows as plain tuples (the stored columns, with the payload
bytes), its checkpoints and its prefold. The decoded objects do not (pickling them cost more than
decoding again): with a prefold the writer needs none (its projector decodes on demand if it
refuses the prefold, ``projector.decode_row``); without one this process decodes each payload
again with ``decode_line``, the function that decoded it in the worker. An oversized line's
salvaged object is small and crosses as it is.

Determinism: the worker runs the sequential path's reading loop, so it flushes the same batches
(same rows, checkpoints, order); this process applies them in that order on one writer thread.

Failure: an exception in the worker reaches this process as one message and is raised here as
``ReaderFailed`` (no traceback from the worker); a worker that dies without a word (killed)
raises ``ReaderFailed`` with its exit code. The worker ignores SIGINT (Ctrl-C reaches the whole
process group: this process stops it) and exits when this process goes away (its pipe breaks).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import multiprocessing
import os
import signal
from collections import OrderedDict
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any, cast

from ingestd.core import derive, projector
from ingestd.core.decode import decode_line
from ingestd.core.oversized import OVERSIZED
from ingestd.core.records import INVALID, LogRow, NewLogRow
from ingestd.core.state import SessionState
from ingestd.core.touch import Ctx
from ingestd.errors import IngestdError
from ingestd.ingest.readfile import Batcher, Plan, Progress, Tailing, read_plans
from ingestd.ingest.summary import Summary
from ingestd.logs import get_logger
from ingestd.store.writer import Prefold, PrefoldGate

log = get_logger("ingestd.ingest")

# fork: the worker starts at once with everything imported and the logging configured
_CTX = multiprocessing.get_context("fork")
# the reading counters the worker fills (the writing ones are this process's)
_COUNTS = ("files_read", "files_unreadable", "files_vanished", "lines", "bytes", "resets", "oversized")
# how long ``close`` waits for a worker that was told to stop
_STOP_S = 5.0
# the fold states the worker keeps (as the writer's FoldCache); past them the least recent goes
PREFOLD_STATES = 256

Wire = tuple[Any, ...]  # one row on the pipe (``_to_wire``)


class ReaderFailed(IngestdError):
    """The reader process failed or died; nothing after its last complete batch was written."""


def _to_wire(r: NewLogRow) -> Wire:
    """A row as sent: its columns, flags, and its object (True: decode the payload again; an
    ``oversized`` or ``invalid`` row's object, salvaged from its bytes, is sent as it is)."""
    obj: Any = None
    if r.obj is not None:
        obj = r.obj if r.event_type in (OVERSIZED, INVALID) else True
    return (*r.db_tuple(), r.recovered, r.reason, obj)


def _from_wire(t: Wire, decode: bool = True) -> NewLogRow:
    """The row ``_to_wire`` sent, its object decoded again from the payload when it had one
    (``decode``; else left None, to be decoded on demand: ``projector.decode_row``)."""
    key, source, etype, payload, received_at, sid, origin, gen, offset, recovered, reason, obj = t
    if obj is True:
        obj = decode_line(payload).obj if decode else None
    return NewLogRow(key, source, etype, payload, received_at, sid, origin, gen, offset, obj, recovered, reason)


class _NeedsLog(Exception):
    """The fold asked for the session's whole log (a refold): only the writer can read it."""


def _no_history() -> list[LogRow]:
    raise _NeedsLog


class _Reading(Batcher):
    """The worker's ``Batcher``: ``flush`` folds the batch ahead (``_prefold``) and sends it down
    the pipe (``("batch", wire rows, checkpoints, (first id, changes) or None)``) instead of
    applying it; it never touches a database."""

    def __init__(self, conn: Connection, summary: Summary, batch_rows: int, ctx: Ctx, first_id: int | None) -> None:
        super().__init__(cast(Any, None), ctx, summary, batch_rows, Tailing.one_shot())
        self.out = conn
        self.next_id = first_id  # None: no fold ahead (the log was not empty, or a fold failed)
        self.states: OrderedDict[str, SessionState] = OrderedDict()
        self.evicted: set[str] = set()  # sessions the writer folds (their state is not here)

    def flush(self) -> None:
        if not self.rows and not self.cps:
            return
        pre = self._prefold(self.rows)
        wire = [_to_wire(r) for r in self.rows]
        msg = ("batch", wire, self.cps, pre)
        # the decoded objects go before the batch is pickled: the two were this process's peak
        self.rows = []
        self.cps = []
        self.out.send(msg)

    def _prefold(self, rows: list[NewLogRow]) -> tuple[int, list[derive.Changes | str]] | None:
        """Fold ``rows`` as ``writer.apply_batch`` would once they are logged at the predicted ids
        (every row inserted, in order, past the ids of the batches before), by session in order of
        first appearance (consecutive sessions' rows merged into one ``Changes``). A session this
        process has no state for (evicted, or its fold asked for the log: a refold) is left to the
        writer, by its id in its place, for the rest of the run. On any other failure (a projector
        error) folding ahead stops for the run: the writer folds from then on."""
        if self.next_id is None:
            return None
        first = self.next_id
        self.next_id += len(rows)
        by_session: dict[str, list[LogRow]] = {}
        for i, r in enumerate(rows):
            if r.session_id is not None:
                by_session.setdefault(r.session_id, []).append(r.logged(first + i))
        parts: list[derive.Changes | str] = []
        try:
            for sid, logged in by_session.items():
                ch = self._fold(sid, logged, first)
                if isinstance(ch, str) or not parts or isinstance(parts[-1], str):
                    parts.append(ch)
                else:
                    parts[-1].extend(ch)
        except Exception as e:
            log.info("prefold_stopped", reason=repr(e), first_id=first)
            self.next_id = None
            self.states.clear()
            self.evicted.clear()
            return None
        while len(self.states) > PREFOLD_STATES:
            self.evicted.add(self.states.popitem(last=False)[0])
        return first, parts

    def _fold(self, sid: str, logged: list[LogRow], first: int) -> derive.Changes | str:
        """``sid``'s rows folded onto its state (kept, the most recent last), or ``sid`` when the
        writer folds it (``evicted``: its state is gone here, or this fold needed the log)."""
        if sid in self.evicted:
            return sid
        try:
            state, ch = projector.fold(self.states.pop(sid, None), sid, logged, self.ctx, _no_history)
        except _NeedsLog:
            log.info("prefold_left_to_writer", session_id=sid, first_id=first)
            self.evicted.add(sid)
            return sid
        self.states[sid] = state
        return ch


def _die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when its parent dies (``PR_SET_PDEATHSIG``); a no-op
    elsewhere, where the broken pipe still ends the worker at its next send."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # 1: PR_SET_PDEATHSIG


def _work(
    conn: Connection,
    theirs: Connection,
    parent: int,
    plans: Sequence[Plan],
    now: str,
    batch_rows: int,
    max_line_bytes: int,
    ctx: Ctx,
    first_id: int | None,
) -> None:
    """The worker process: read the plans, send batches, progress and finally the counts.

    Every exception is sent as ``("error", text)`` instead of printed; a broken pipe (the writing
    process is gone) ends the worker quietly, and so does SIGTERM when the writing process dies.
    """
    theirs.close()  # the reading end is the writing process's alone: its exit must break the pipe
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    if os.getppid() != parent:
        return  # the writing process died before the request above took effect
    try:
        summary = Summary()
        b = _Reading(conn, summary, batch_rows, ctx, first_id)
        b.max_line_bytes = max_line_bytes
        read_plans(b, plans, now, lambda n: conn.send(("progress", n)))
        conn.send(("done", {k: getattr(summary, k) for k in _COUNTS}))
    except (BrokenPipeError, ConnectionResetError):
        return
    except BaseException as e:
        with contextlib.suppress(OSError):
            conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


# glibc's ``mallopt`` parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
# freed memory above this much at a heap's top goes back to the system, and blocks this large are
# mapped apart (freed at once) instead of taken from a heap; glibc's default raises both to the
# largest block freed so far (a 16 MiB pickled batch), so the heaps kept what every batch freed
LEAN_BYTES = 128 << 10


def lean_malloc() -> None:
    """Make glibc's malloc give freed memory back to the system in this process and the ones it
    forks from now on: one heap for every thread (the writer thread's arena kept its own high
    water), a fixed mmap threshold and trim threshold of ``LEAN_BYTES``. Process-wide and lasting
    (``mallopt``); a no-op where there is no ``mallopt`` (not glibc). Cost: a few more ``mmap``s.

    Measured on c100 with the reader process: the two processes' peaks 153 + 103 MiB to
    130 + 89 MiB, the same CPU (BENCHMARKS.md, issue 14, eighth round)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        mallopt(_M_ARENA_MAX, 1)
        mallopt(_M_MMAP_THRESHOLD, LEAN_BYTES)
        mallopt(_M_TRIM_THRESHOLD, LEAN_BYTES)


def _widen(conn: Connection) -> None:
    """Give the pipe the largest buffer the system allows (Linux; elsewhere it stays as it is).

    A batch is megabytes: through the default 64 KiB each one took hundreds of hand-offs between
    the two processes, each waiting for the other to be scheduled (slow on a busy machine)."""
    setsz = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setsz is None:
        return
    try:
        with open("/proc/sys/fs/pipe-max-size") as fh:
            size = int(fh.read())
        fcntl.fcntl(conn.fileno(), setsz, size)
    except (OSError, ValueError):
        pass  # the default buffer works, only slower


class ReaderProcess:
    """A forked process that reads ``plans`` into batches (``readfile.read_plans``) for this one.

    Start it before this process starts threads. Memory: the worker holds the batch it builds or
    the one it is sending (the pipe blocks it until this process takes it); this process holds
    the one its writer applies and the one it receives (``feed``).
    """

    def __init__(
        self, plans: Sequence[Plan], now: str, batch_rows: int, max_line_bytes: int, ctx: Ctx, first_id: int | None
    ) -> None:
        lean_malloc()  # before the fork and this process's threads: both processes, every thread
        recv, send = _CTX.Pipe(duplex=False)
        _widen(send)
        args = (send, recv, os.getpid(), plans, now, batch_rows, max_line_bytes, ctx, first_id)
        self._proc = _CTX.Process(target=_work, args=args, name="ingestd-reader", daemon=True)
        self.gate = PrefoldGate()
        self._proc.start()
        send.close()  # the worker holds the only sending end: its exit ends our reads
        self._conn = recv

    def feed(self, b: Batcher, progress: Progress | None) -> None:
        """Hand every batch the worker sends to ``b`` (``flush``: its writer), in order; add the
        worker's reading counts to ``b.summary``.

        Raises:
            ReaderFailed: the worker reported an error or died; whatever ``b.flush`` raises.
        """
        while True:
            if b.pipe is not None:
                # one batch written, one received: the next is taken from the pipe only once the
                # writer has the last (the worker waits on the pipe meanwhile, its batch ready)
                b.pipe.wait_free()
            try:
                msg = self._conn.recv()
            except EOFError:
                self._proc.join()
                raise ReaderFailed(
                    f"the reader process exited unexpectedly (exit code {self._proc.exitcode})"
                ) from None
            kind = msg[0]
            if kind == "batch":
                pre = msg[3]
                # folded ahead: the writer needs no objects unless it refuses the fold (then its
                # projector decodes each payload itself, ``projector.decode_row``)
                b.rows = [_from_wire(t, decode=pre is None) for t in msg[1]]
                b.cps = msg[2]
                b.prefold = Prefold(pre[0], pre[1], self.gate) if pre is not None else None
                b.flush()
            elif kind == "progress":
                if progress is not None:
                    progress(msg[1])
            elif kind == "done":
                for k, v in msg[1].items():
                    setattr(b.summary, k, getattr(b.summary, k) + v)
                return
            else:
                raise ReaderFailed(f"the reader process failed: {msg[1]}")

    def close(self) -> None:
        """Stop the worker (if still running) and wait for it; safe to call more than once."""
        self._conn.close()
        if self._proc.is_alive():
            self._proc.join(0.2)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(_STOP_S)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
