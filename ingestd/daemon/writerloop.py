"""The writer process's loop (``writerchild.serve_parent``): groups in arrival order, each answered
after its COMMIT, and the next group gathered and folded while that COMMIT runs (issue 14).

A group's COMMIT (WAL pages written, fsync) runs with the GIL released. With a ``HookStore``
(``ingestd.daemon.apply``), ``commit_with`` hands the time to a second thread (``_Folder``): it
takes the deliveries that have arrived or arrive until the COMMIT ends (reading the socket with
``MSG_DONTWAIT``, woken by a pipe when the COMMIT is over) and folds them as they come
(``foldahead.Ahead``); they are the next group, and their fold its ``prefold``, which its
transaction writes only when every row went in at the ids predicted and nobody else committed in
between (else it folds them inside, as always). The connection is only ever used by this
process's main thread; the fold's thread touches only the ``FoldCache``, and only while the main
thread is in the COMMIT or answering (before it waits for the fold, ``_Server._next``).
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import socket
import threading
from collections.abc import Callable
from typing import Any

import apsw

from ingestd.daemon.apply import HookStore
from ingestd.daemon.committer import ApplyFn
from ingestd.daemon.writerchild import CALL, ROWS, STOP, FrameReader, _receive, frame, from_wire, process
from ingestd.logs import get_logger
from ingestd.store.foldahead import Ahead
from ingestd.store.writer import Prefold

log = get_logger("ingestd.writerproc")

Gathered = tuple[list[Any], "Prefold | None"]
Gathering = tuple[list[Any], "Ahead | None", int]  # items taken, their fold so far, their rows


class _Folder:
    """A thread that runs one job at a time for the main thread (``start``, then ``result``)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], Any] | None] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="ingestd-foldahead", daemon=True).start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                self._done.put((True, job()))
            except BaseException as e:  # raised again on the main thread, where it ends the process
                self._done.put((False, e))

    def start(self, job: Callable[[], Any]) -> None:
        """Run ``job`` on the thread."""
        self._jobs.put(job)

    def result(self) -> Any:
        """What the last ``start``ed job returned (waits for it); raises what it raised."""
        ok, value = self._done.get()
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        """End the thread once it is idle."""
        self._jobs.put(None)


class _Server:
    """``serve``'s state: the socket, what has arrived, and the group gathered during a COMMIT."""

    def __init__(self, sock: socket.socket, conn: apsw.Connection, apply: ApplyFn, max_group_rows: int) -> None:
        self.sock, self.conn, self.apply, self.max_group_rows = sock, conn, apply, max_group_rows
        self.reader = FrameReader()
        self.pending: list[Any] = []
        self.stopping = False
        self.store = apply if isinstance(apply, HookStore) else None
        self.folder = _Folder() if self.store is not None else None
        self.gathering = False  # the folder is gathering the next group (``result`` not yet taken)
        self.calls_ran = False  # a call ran after the gathered group's fold began: refuse that fold
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)

    def _got(self, got: list[Any] | None) -> None:
        self.stopping = self.stopping or got is None or any(it[0] == STOP for it in got)
        self.pending += [it for it in got or () if it[0] != STOP]

    def _receive_nowait(self) -> None:
        """Whatever has arrived, without waiting and without touching the socket's blocking mode
        (the main thread may be answering on it meanwhile)."""
        got: list[Any] = []
        while True:
            try:
                data = self.sock.recv(1 << 20, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionResetError:
                data = b""
            if not data:
                self._got(None)
                break
            for f in self.reader.feed(data):
                got.extend(f)
        self._got(got)

    def _take(self, max_rows: int) -> list[Any]:
        take, nrows = 0, 0
        while take < len(self.pending) and (take == 0 or nrows < max_rows):
            nrows += len(self.pending[take][2]) if self.pending[take][0] == ROWS else 0
            take += 1
        items, self.pending = self.pending[:take], self.pending[take:]
        return items

    def _fold(self, ahead: Ahead | None, chunk: list[Any]) -> int:
        """Add ``chunk``'s rows to ``ahead`` (when it still holds); the number of rows."""
        rows = [from_wire(w) for it in chunk if it[0] == ROWS for w in it[2]]
        if ahead is not None and ahead.ok:
            try:
                ahead.add(rows)
            except Exception as e:  # the transaction folds these rows itself, and says what failed
                log.warning("fold_ahead_failed", error=repr(e))
                ahead.ok = False
        return len(rows)

    def _gather(self, ahead: Ahead | None) -> Gathering:
        """On the folder: take and fold what arrives until the pipe says the COMMIT is over."""
        items: list[Any] = []
        nrows = 0
        while nrows < self.max_group_rows:
            self._receive_nowait()
            if self.pending:
                chunk = self._take(self.max_group_rows - nrows)
                items += chunk
                nrows += self._fold(ahead, chunk)
                continue
            if self.stopping:
                break
            ready, _, _ = select.select([self.sock.fileno(), self.wake_r], [], [])
            if self.wake_r in ready:
                break
        return items, ahead, nrows

    def _joined(self) -> Gathering:
        """The folder's gathering (waits for it)."""
        self.gathering = False
        got: Gathering = self.folder.result() if self.folder is not None else ([], None, 0)
        with contextlib.suppress(BlockingIOError):
            os.read(self.wake_r, 64)
        return got

    def _commit_with(self) -> Callable[[Callable[[], object]], None]:
        """Runs a group's COMMIT while the folder gathers the next group (once per group)."""
        used = False

        def commit_with(do_commit: Callable[[], object]) -> None:
            nonlocal used
            if used or self.folder is None or self.store is None:
                do_commit()
                return
            used = True
            ahead = self.store.ahead()
            self.gathering, self.calls_ran = True, False
            self.folder.start(lambda: self._gather(ahead))
            try:
                do_commit()
            except BaseException:
                os.write(self.wake_w, b"x")
                items, _, _ = self._joined()  # the retries use the cache: the folder must be done
                self.pending[:0] = items  # folded onto states that rolled back: folded again later
                raise
            os.write(self.wake_w, b"x")  # the answer goes out while the folder finishes

        return commit_with

    def next_group(self) -> Gathered | None:
        """The next group and its fold made ahead (None: nothing has arrived, or stopping and all done).

        After a COMMIT, the group the folder gathered meanwhile, with what has arrived since
        (folded here: the group is what it would be without the folder)."""
        items: list[Any] = []
        ahead, nrows = None, 0
        if self.gathering:
            items, ahead, nrows = self._joined()
        if not self.stopping:  # what arrived meanwhile joins the group (waiting when nothing is pending)
            self._got(_receive(self.sock, self.reader, block=not self.pending and not items))
        if self.pending and (not items or nrows < self.max_group_rows):
            more = self._take(self.max_group_rows - nrows)
            items += more
            if ahead is not None:
                self._fold(ahead, more)
        if not items:
            return None
        pre = self.store.made(ahead) if self.store is not None and ahead is not None else None
        if pre is not None and self.calls_ran:
            pre.gate.refused = True  # a call ran after the fold was begun: its writes are unseen
        return items, pre

    def run_group(self, items: list[Any], prefold: Prefold | None) -> None:
        """Commit ``items``' rows in one transaction, run their calls, answer."""
        ahead = {"prefold": prefold, "commit_with": self._commit_with()} if self.folder is not None else {}
        reply = frame(process(self.conn, self.apply, items, **ahead))
        self.calls_ran = self.calls_ran or any(it[0] == CALL for it in items)
        with contextlib.suppress(OSError):  # the parent went away: the rows are committed anyway
            self.sock.setblocking(True)
            self.sock.sendall(reply)

    def close(self) -> None:
        """Stop the folder (after its last gathering) and close the pipe."""
        if self.folder is not None:
            if self.gathering:
                os.write(self.wake_w, b"x")
                self._joined()
            self.folder.stop()
            assert self.store is not None
            log.info("writer_folded_ahead", groups=self.store.folded_ahead, used=self.store.ahead_used)
        os.close(self.wake_r)
        os.close(self.wake_w)


def serve(sock: socket.socket, conn: apsw.Connection, apply: ApplyFn, max_group_rows: int) -> None:
    """Answer the parent until it says STOP or goes away, every group received committed first.

    Args:
        sock: the child's end of the socket pair (``writerchild`` frames).
        conn: the write connection (used on this thread only).
        apply: the ``ApplyFn``; a ``HookStore`` gets the overlap.
        max_group_rows: int, rows per grouped transaction at most.
    """
    server = _Server(sock, conn, apply, max_group_rows)
    try:
        while True:
            nxt = server.next_group()
            if nxt is None:
                if server.stopping:
                    return
                continue
            server.run_group(*nxt)
    finally:
        server.close()
