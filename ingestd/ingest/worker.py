"""Reading in a worker process while this one writes (issue 14: use both cores).

A pipelined ingest (``ingestd.ingest.pipeline``) runs its reading and its writing on two threads
of one process, so their Python shares one GIL. ``ReaderProcess`` moves the reading (opening,
framing, decoding, keying: ``readfile.read_plans``, unchanged) into a forked process; the batches
come back over a pipe and are applied by this process's writer thread as before.

What crosses the pipe: each batch's rows as plain tuples (the stored columns, with the payload
bytes) and its checkpoints. The decoded objects do not (pickling them cost more than decoding
again): this process decodes each payload again with ``decode_line``, the function that decoded
it in the worker, so every row is the one the sequential path builds. An oversized line's
salvaged object is small and crosses as it is.

Determinism: the worker runs the sequential path's reading loop, so it flushes the same batches
(same rows, checkpoints, order); this process applies them in that order on one writer thread.
Nothing is predicted: log ids are still taken by the writer inside its transaction, so an ingest
beside a running daemon is as correct as the threaded one.

Failure: an exception in the worker reaches this process as one message and is raised here as
``ReaderFailed`` (no traceback from the worker); a worker that dies without a word (killed)
raises ``ReaderFailed`` with its exit code. The worker ignores SIGINT (Ctrl-C reaches the whole
process group: this process stops it) and exits when this process goes away (its pipe breaks).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any, cast

from ingestd.core.decode import decode_line
from ingestd.core.oversized import OVERSIZED
from ingestd.core.records import NewLogRow
from ingestd.core.touch import Ctx
from ingestd.errors import IngestdError
from ingestd.ingest.readfile import Batcher, Plan, Progress, Summary, read_plans

# fork: the worker starts at once with everything imported and the logging configured
_CTX = multiprocessing.get_context("fork")
# the reading counters the worker fills (the writing ones are this process's)
_COUNTS = ("files_read", "files_unreadable", "lines", "bytes", "resets", "oversized")
# how long ``close`` waits for a worker that was told to stop
_STOP_S = 5.0

Wire = tuple[Any, ...]  # one row on the pipe (``_to_wire``)


class ReaderFailed(IngestdError):
    """The reader process failed or died; nothing after its last complete batch was written."""


def _to_wire(r: NewLogRow) -> Wire:
    """A row as sent: its columns, flags, and its object (True: decode the payload again)."""
    obj: Any = None
    if r.obj is not None:
        obj = r.obj if r.event_type == OVERSIZED else True
    return (*r.db_tuple(), r.recovered, r.reason, obj)


def _from_wire(t: Wire) -> NewLogRow:
    """The row ``_to_wire`` sent, its object decoded again from the payload when it had one."""
    key, source, etype, payload, received_at, sid, origin, gen, offset, recovered, reason, obj = t
    if obj is True:
        obj = decode_line(payload).obj
    return NewLogRow(key, source, etype, payload, received_at, sid, origin, gen, offset, obj, recovered, reason)


class _WireRows(list[Any]):
    """The worker's batch: each row kept as ``_to_wire`` makes it as soon as it is read, so its
    decoded object is freed at once (the worker never needs it again)."""

    def append(self, r: Any) -> None:
        super().append(_to_wire(r))


class _Reading(Batcher):
    """The worker's ``Batcher``: ``flush`` sends the batch down the pipe instead of applying it
    (``("batch", wire rows, checkpoints)``); it never touches a database."""

    def __init__(self, conn: Connection, summary: Summary, batch_rows: int) -> None:
        super().__init__(cast(Any, None), Ctx(), summary, batch_rows)
        self.out = conn
        self.rows = _WireRows()

    def flush(self) -> None:
        if not self.rows and not self.cps:
            return
        self.out.send(("batch", self.rows, self.cps))
        self.rows = _WireRows()
        self.cps = []


def _work(conn: Connection, plans: Sequence[Plan], now: str, batch_rows: int, max_line_bytes: int) -> None:
    """The worker process: read the plans, send batches, progress and finally the counts.

    Every exception is sent as ``("error", text)`` instead of printed; a broken pipe (the writing
    process is gone) ends the worker quietly.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        summary = Summary()
        b = _Reading(conn, summary, batch_rows)
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


class ReaderProcess:
    """A forked process that reads ``plans`` into batches (``readfile.read_plans``) for this one.

    Start it before this process starts threads. Memory: the worker holds the batch it builds and
    the one it is sending (the pipe blocks it until this process takes it).
    """

    def __init__(self, plans: Sequence[Plan], now: str, batch_rows: int, max_line_bytes: int) -> None:
        recv, send = _CTX.Pipe(duplex=False)
        self._proc = _CTX.Process(
            target=_work, args=(send, plans, now, batch_rows, max_line_bytes), name="ingestd-reader", daemon=True
        )
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
            try:
                msg = self._conn.recv()
            except EOFError:
                self._proc.join()
                raise ReaderFailed(
                    f"the reader process exited unexpectedly (exit code {self._proc.exitcode})"
                ) from None
            kind = msg[0]
            if kind == "batch":
                b.rows = [_from_wire(t) for t in msg[1]]
                b.cps = msg[2]
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
