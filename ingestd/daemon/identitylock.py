"""The database's host id does not change under a writer: ``ship --set-host-id`` against ``ingest``.

A writer reads the database's identity (``meta.host_id``, ``ingestd.store.identity``) once, when it
starts, and stamps every orchestration edge it writes with it. ``ship --set-host-id`` re-stamps the
edges and changes ``meta.host_id`` in one transaction: a writer running across that moment would go
on stamping new edges with the old id (team mode: ``replay`` then disagrees, the store sees two hosts).

The daemon is kept out by its own lock (``ingestd.daemon.lock``), which ``--set-host-id`` takes. A
one-shot ``ingest`` may run beside the daemon and beside another ``ingest``, so it cannot take that
exclusive lock: it holds this one *shared* for its whole run, and ``--set-host-id`` takes it
*exclusive* without waiting, so it refuses while any ``ingest`` runs.

The lock is an open-file-description lock (``F_OFD_SETLK``, Linux) on one byte of the database file
far past the bytes SQLite locks (from 1 GiB on): keyed by the file's identity like the daemon's
``flock`` (any spelling of the path reaches it), independent of that ``flock`` and of SQLite's POSIX
locks, not dropped when SQLite closes one of its own descriptors, and dropped by the kernel when the
process dies (kill -9 included: nothing stale blocks). Where there is no such lock (macOS), these
functions hold nothing: ``--set-host-id`` is then excluded from the daemon only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path

from ingestd.errors import DaemonError

# One byte at 2**62: SQLite's lock bytes are 0x40000000 to 0x400001FF (its "pending byte" and the
# shared range), so the two never meet; a lock past the end of a file is allowed and grows nothing.
_BYTE = 1 << 62
_SETLK = getattr(fcntl, "F_OFD_SETLK", None)
_SETLKW = getattr(fcntl, "F_OFD_SETLKW", None)


def _flock_struct(kind: int) -> bytes:
    """``struct flock`` (l_type, l_whence, l_start, l_len, l_pid = 0 as OFD locks require)."""
    return struct.pack("hhxxxxqqixxxx", kind, os.SEEK_SET, _BYTE, 1, 0)


@contextlib.contextmanager
def shared(db_path: Path) -> Iterator[None]:
    """Hold the shared lock on the database ``db_path`` names while the block runs (a writer that
    stamps rows with the host id it read). Waits while a ``--set-host-id`` holds it (one short
    transaction). Opens (never creates) the file; a missing file holds nothing.

    Raises:
        OSError: the file exists but cannot be opened for reading. Anything but a regular file is
            opened (without waiting, a FIFO included) and not locked: opening the database refuses it.
    """
    if _SETLKW is None:
        yield
        return
    try:
        # non-blocking: a FIFO at the path must not hang the open (``open_db`` then refuses it)
        fd = os.open(db_path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        yield
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # anything else is refused as a database anyway
            fcntl.fcntl(fd, _SETLKW, _flock_struct(fcntl.F_RDLCK))
        yield
    finally:
        os.close(fd)  # drops the lock (its only descriptor)


@contextlib.contextmanager
def exclusive(db_path: Path) -> Iterator[None]:
    """Hold the lock exclusive while the block runs (``ship --set-host-id``), without waiting.

    Raises:
        DaemonError: a writer (an ``ingestd ingest``) holds it shared.
        OSError: the file cannot be opened for writing.
    """
    if _SETLK is None:
        yield
        return
    fd = os.open(db_path, os.O_RDWR | os.O_CLOEXEC)
    try:
        try:
            fcntl.fcntl(fd, _SETLK, _flock_struct(fcntl.F_WRLCK))
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise DaemonError(
                f"an `ingestd ingest` is writing to {db_path} with the current host id: "
                "let it finish (or stop it), then run this again",
                path=str(db_path),
            ) from None
        yield
    finally:
        os.close(fd)
