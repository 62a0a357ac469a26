"""One daemon per database: an ``fcntl`` lock on ``<db>.lock`` held for the process lifetime.

The kernel drops the lock when the process dies (kill -9 included), so a stale file
never blocks a restart.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from ingestd.errors import DaemonError


class DaemonLock:
    """The held lock; ``release()`` (or process exit) frees it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    def release(self) -> None:
        """Release the lock and close the file (the file itself stays)."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


def lock_path(db_path: Path) -> Path:
    """``<db>.lock`` beside the database file itself.

    Symlinks are resolved first: a second spelling of the same database (a symlink to the
    file or to a directory on its path) must find the same lock, or two daemons would run.
    """
    real = Path(os.path.realpath(db_path))
    return real.with_name(real.name + ".lock")


def acquire(db_path: Path) -> DaemonLock:
    """Take the exclusive daemon lock for ``db_path`` without waiting.

    Raises:
        DaemonError: another process holds it (its pid is in the message when known).
    """
    path = lock_path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise DaemonError(
            f"another ingestd serve (pid {holder}) is already running on {db_path}; "
            "stop it first or pass a different --db",
            lock=str(path),
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return DaemonLock(path, fd)
