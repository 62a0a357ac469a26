"""WAL checkpoints on a thread of their own, off the commit path (SPEC §11 design hints).

``WalCheckpointer``; not the ingest ``Checkpoint`` (``ingestd.core.rows``), a file's tail position.

SQLite's automatic checkpoint runs inside the ``COMMIT`` that crosses its threshold: that
commit then copies the WAL into the database file and syncs it, and every hook waiting on
the group pays for it (tens of ms on a loaded disk: the hook receiver's p99). The daemon's
write connections turn it off (``wal_autocheckpoint(0)``) and tell this thread instead,
from SQLite's WAL hook, when the WAL has grown past ``wal_pages``. The thread runs a
``PASSIVE`` checkpoint on its own connection: it never blocks a writer, and once it has
copied everything the next write transaction starts the WAL over from the beginning.
A failing checkpoint loses nothing (the WAL holds every committed row); it is logged and
tried again at the next signal.

SQLite starts the WAL over only in a write transaction begun after every frame was copied. A
writer that begins its next transaction as soon as one commits (a hook writer under steady load)
always begins before the thread's checkpoint of that commit ends, so the WAL never starts over:
the file grows with every commit for as long as the load lasts, and the thread checkpoints after
each one. ``restart_missed``, run by the writer on its own connection
between transactions, copies the last frames itself once the WAL is ``RESTART_FACTOR`` times the
threshold, so the writer's next transaction starts it over.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

import apsw

from ingestd import logs
from ingestd.errors import BusyError, StorageError
from ingestd.logs import get_logger
from ingestd.store.connection import Db, storage_errors

log = get_logger("ingestd.walcheckpoint")

WAL_PAGES = 1000  # SQLite's own autocheckpoint threshold
# A WAL this many times the threshold has missed its restart (the thread checkpoints at the
# threshold): the writer copies the frames left itself (``restart_missed``).
RESTART_FACTOR = 2


class WalSize:
    """A connection's WAL size in pages after its last commit, as its WAL hook reported it
    (``Db.state``; 0 before its first commit)."""

    def __init__(self) -> None:
        self.pages = 0
        self.failing = False  # the last ``restart_missed`` checkpoint failed (logged once until one succeeds)


class WalCheckpointer:
    """Runs ``PASSIVE`` checkpoints when an attached connection's WAL passes ``wal_pages``.

    Args:
        open_conn: opens the checkpointer's own connection (called on its thread).
        wal_pages: int, pages in the WAL past which a checkpoint is due.
    """

    def __init__(self, open_conn: Callable[[], Db], *, wal_pages: int = WAL_PAGES) -> None:
        self._open_conn = open_conn
        self._wal_pages = wal_pages
        self._due = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self.checkpoints = 0
        self.last: tuple[int, int] | None = None  # (frames in the WAL, frames copied) of the last one

    def attach(self, conn: Db) -> Db:
        """Turn ``conn``'s automatic checkpoints off and signal this thread instead; returns ``conn``."""
        conn.wal_autocheckpoint(0)
        size = conn.state(WalSize)

        def hook(_conn: apsw.Connection, _db: str, pages: int) -> int:
            size.pages = pages
            if pages >= self._wal_pages:
                self._due.set()
            return apsw.SQLITE_OK

        conn.set_wal_hook(hook)
        return conn

    def restart_missed(self, conn: Db) -> bool:
        """On ``conn``'s own thread, between its transactions (an attached connection): when its WAL
        has reached ``RESTART_FACTOR`` times the threshold, run a ``PASSIVE`` checkpoint on ``conn``
        (the thread has copied all but the last commits' frames), so ``conn``'s next write
        transaction starts the WAL over (unless a reader still reads from it). Never blocks: a
        checkpoint running on the thread (busy) or a failure leaves it to the next call.

        Returns:
            bool, whether a checkpoint ran to its end.
        """
        size = conn.state(WalSize)
        if size.pages < self._wal_pages * RESTART_FACTOR:
            return False
        try:
            with storage_errors():
                wal, copied = conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
        except StorageError as e:  # BusyError: the thread's checkpoint is running
            if not isinstance(e, BusyError) and not size.failing:  # a full disk: said once, not per group
                log.error("checkpoint_failed", error=str(e))
                size.failing = True
            return False
        size.pages, size.failing = 0, False  # the next commit reports the size again
        if logs.enabled("debug"):
            log.debug("restart_checkpoint", wal_pages=wal, copied=copied)
        return True

    def start(self) -> None:
        """Start the thread."""
        self._thread = threading.Thread(target=self._run, name="ingestd-checkpoint", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Finish the running checkpoint, then stop."""
        if self._thread is None:
            return
        self._stop = True
        self._due.set()
        self._thread.join(timeout_s)
        self._thread = None

    def _run(self) -> None:
        conn: Db | None = None
        while not self._stop:
            self._due.wait()
            self._due.clear()
            if self._stop:
                break
            t0 = time.perf_counter()
            try:
                if conn is None:
                    conn = self._open_conn()
                with storage_errors():
                    wal, copied = conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
            except BusyError:
                # another checkpoint is running (a connection closing, the writer's idle one)
                log.debug("checkpoint_busy")
                continue
            except StorageError as e:
                log.error("checkpoint_failed", error=str(e))
                continue
            self.checkpoints += 1
            self.last = (wal, copied)
            if logs.enabled("debug"):  # structlog is imported at a first line: not for a filtered one
                log.debug(
                    "checkpoint", wal_pages=wal, copied=copied, elapsed_ms=round((time.perf_counter() - t0) * 1000, 3)
                )
        if conn is not None:
            with contextlib.suppress(apsw.Error):
                conn.close()
