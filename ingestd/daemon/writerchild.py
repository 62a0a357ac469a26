"""The writer process's side (``ingestd.daemon.writerproc``): the hook writer off the event loop's core.

The daemon's event loop only speaks HTTP; this process owns the hook write connection and runs
the same ``ApplyFn`` the in-process ``ThreadWriter`` runs (``ingestd.daemon.hookwriter.make_apply``: append,
fold, upserts, watchdog pass, one ``BEGIN IMMEDIATE`` transaction), with group commit: it takes
every frame that has arrived, puts all their log rows in one transaction, commits, and only then
answers. A grouped transaction that fails is retried one submission at a time, so one bad
delivery cannot sink its neighbours. WAL checkpoints run on this process's own checkpointer thread.

Wire format, both ways over one ``AF_UNIX`` stream socket: frames of a 4-byte big-endian length
and a pickle. Parent to child: a list of items ``(ROWS, id, [row tuple, ...])``, ``(CALL, id, pickled fn)``
or ``(STOP,)``; a row tuple is ``wire_row`` (no decoded ``obj``: this process parses the payload
again, off the loop). Child to parent: ``(results, groups)`` where ``results`` is a list of
``(id, ok, value)`` (``value``: the rows inserted or ``fn``'s result pickled when ``ok``, else
``(error class name, message, whether it is a StorageError)``) and ``groups`` a list of
``(rows inserted, submissions)`` per committed transaction. The first frame the child sends is
``READY`` or ``(FAILED, message)``.
"""

from __future__ import annotations

import contextlib
import pickle
import signal
import socket
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from ingestd.core.records import NewLogRow
from ingestd.daemon.hookwriter import ApplyFn
from ingestd.daemon.lifeline import die_with_daemon
from ingestd.errors import StorageError
from ingestd.logs import configure, get_logger
from ingestd.store.connection import Db, connect
from ingestd.store.migrate import migrate
from ingestd.store.walcheckpoint import WalCheckpointer

log = get_logger("ingestd.writerproc")

ROWS, CALL, STOP = 0, 1, 2
READY = "ready"
FAILED = "failed"
_LEN = struct.Struct(">I")

Result = tuple[int, bool, Any]

WireRow = tuple[str, str, str, bytes, str, "str | None", str, int, "int | None", bool, "str | None"]


def wire_row(r: NewLogRow) -> WireRow:
    """``r`` as a plain tuple (cheap to pickle), without the decoded ``obj``."""
    return (
        r.idempotency_key,
        r.source,
        r.event_type,
        r.payload,
        r.received_at,
        r.session_id,
        r.origin,
        r.origin_gen,
        r.origin_offset,
        r.recovered,
        r.reason,
    )


def from_wire(w: WireRow) -> NewLogRow:
    """The ``NewLogRow`` of a ``wire_row`` tuple (``obj`` None: the fold parses the payload)."""
    return NewLogRow(*w[:9], recovered=w[9], reason=w[10])


def frame(obj: Any) -> bytes:
    """One frame: length prefix and pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(data)) + data


class FrameReader:
    """Cuts a byte stream into unpickled frames (``feed`` bytes, then take ``frames()``)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        """Append ``data``; every frame now complete, in order."""
        self._buf += data
        out: list[Any] = []
        pos = 0
        while len(self._buf) - pos >= 4:
            (n,) = _LEN.unpack_from(self._buf, pos)
            if len(self._buf) - pos - 4 < n:
                break
            out.append(pickle.loads(self._buf[pos + 4 : pos + 4 + n]))
            pos += 4 + n
        if pos:
            del self._buf[:pos]
        return out


def _receive(sock: socket.socket, reader: FrameReader, block: bool) -> list[Any] | None:
    """Items of every complete frame available (waiting for one when ``block``); None at EOF."""
    items: list[Any] = []
    sock.setblocking(block)
    while True:
        try:
            data = sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return items
        except ConnectionResetError:  # the daemon was killed: what was received is still committed
            data = b""
        if not data:
            return None
        for f in reader.feed(data):
            items.extend(f)
        if items:
            sock.setblocking(False)


def _error(e: BaseException) -> tuple[str, str, bool]:
    return (type(e).__name__, str(e), isinstance(e, StorageError))


Groups = list[tuple[int, int]]


def _commit(conn: Db, apply: ApplyFn, batches: list[tuple[int, list[NewLogRow]]]) -> tuple[list[Result], Groups]:
    """One transaction for every batch (split one by one when it fails): results and groups."""
    try:
        inserted = apply(conn, [r for _, rows in batches for r in rows])
    except Exception as e:
        if len(batches) > 1:
            results: list[Result] = []
            groups: list[tuple[int, int]] = []
            for b in batches:
                res, grp = _commit(conn, apply, [b])
                results += res
                groups += grp
            return results, groups
        log.error("batch_failed", rows=len(batches[0][1]), error=str(e) if isinstance(e, StorageError) else repr(e))
        return [(batches[0][0], False, _error(e))], []
    return [(i, True, inserted) for i, _ in batches], [(inserted, len(batches))]


def process(conn: Db, apply: ApplyFn, items: list[Any]) -> tuple[list[Result], list[tuple[int, int]]]:
    """Apply one drained list of items: the rows in one grouped transaction, then the calls, in order."""
    batches = [(it[1], [from_wire(w) for w in it[2]]) for it in items if it[0] == ROWS]
    results: list[Result] = []
    groups: list[tuple[int, int]] = []
    if batches:
        results, groups = _commit(conn, apply, batches)
    for it in items:
        if it[0] == CALL:
            try:
                value = pickle.loads(it[2])(conn)
                # pickled here, once: a result that cannot travel is the caller's error, not this
                # process's end, and the reply frame carries these bytes (the parent unpickles them)
                results.append((it[1], True, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)))
            except Exception as e:
                results.append((it[1], False, _error(e)))
    return results, groups


def serve_parent(sock: socket.socket, conn: Db, apply: ApplyFn, max_group_rows: int) -> None:
    """Answer the parent until it says STOP or goes away (everything received is committed first)."""
    reader = FrameReader()
    pending: list[Any] = []
    while True:
        got = _receive(sock, reader, block=not pending)
        stopping = got is None or any(it[0] == STOP for it in got)
        pending += [it for it in got or () if it[0] != STOP]
        while pending:
            take, nrows = 0, 0
            while take < len(pending) and (take == 0 or nrows < max_group_rows):
                nrows += len(pending[take][2]) if pending[take][0] == ROWS else 0
                take += 1
            items, pending = pending[:take], pending[take:]
            reply = frame(process(conn, apply, items))
            with contextlib.suppress(OSError):  # the parent went away: the rows are committed anyway
                sock.setblocking(True)
                sock.sendall(reply)
            if not stopping:
                break  # take what arrived meanwhile into the next group
        if stopping and not pending:
            return


def _open(db_path: str) -> tuple[Db, WalCheckpointer]:
    checkpointer = WalCheckpointer(lambda: connect(Path(db_path)))
    conn = connect(Path(db_path))
    migrate(conn)
    checkpointer.attach(conn)
    checkpointer.start()
    return conn, checkpointer


def _only_the_parent_stops_it() -> None:
    """Ignore SIGINT and SIGTERM: a Ctrl-C (the whole foreground group) or a service manager's
    SIGTERM to the whole group reached this process too and killed it mid-stream (a
    KeyboardInterrupt traceback, exit 1 or 255, ``writer_process_exited`` at error level). It ends
    when its parent says STOP or goes away (the socket closes), having committed what it was sent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def main(
    sock: socket.socket, db_path: str, make_apply: Callable[[], ApplyFn], max_group_rows: int, log_level: str
) -> None:
    """The writer process's entry point (``multiprocessing`` target): open, say READY, serve, close.

    Args:
        sock: the child's end of the socket pair (passed by ``multiprocessing``).
        db_path: the database; opened and migrated here, WAL checkpoints on this process's thread.
        make_apply: builds the ``ApplyFn`` (and its fold cache) in this process (module-level:
            it is pickled).
        max_group_rows: int, rows per grouped transaction at most.
        log_level: this process logs at the daemon's level.
    """
    die_with_daemon()  # even stopped (SIGSTOP), it does not outlive a kill -9 of serve
    _only_the_parent_stops_it()
    configure(level=log_level, force=True)
    try:
        conn, checkpointer = _open(db_path)
        apply = make_apply()
    except BaseException as e:
        sock.sendall(frame((FAILED, str(e))))
        raise
    sock.sendall(frame(READY))
    try:
        serve_parent(sock, conn, apply, max_group_rows)
    finally:
        with contextlib.suppress(apsw.Error):
            conn.close()
        checkpointer.stop()
        sock.close()
