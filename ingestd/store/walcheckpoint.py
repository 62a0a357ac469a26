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

        def hook(_conn: apsw.Connection, _db: str, pages: int) -> int:
            if pages >= self._wal_pages:
                self._due.set()
            return apsw.SQLITE_OK

        conn.set_wal_hook(hook)
        return conn

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
