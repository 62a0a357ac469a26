"""One daemon per database: an ``flock`` on the database file itself, held for the process lifetime.

The lock is on the file's identity (SPEC §12), not on a path: every spelling of the same
database (a symlink, a relative path, a hard link, a bind mount) opens the same inode, and the
kernel refuses a second exclusive ``flock`` on it whichever path reached it. (A lock file beside
the path let two daemons run through a hard link, each with its own WAL, and the database was
corrupted within seconds.) SQLite's own locks are POSIX byte-range locks, which on Linux are
independent of ``flock``. The kernel drops the lock when the process dies (kill -9 included), so
nothing stale ever blocks a restart.

The refusal names the holder's pid: from ``/proc/locks`` (the kernel's table, by device and
inode, so it is right however the holder spelt the path), else from ``<db>.lock``, a pid file the
holder writes beside the database's real path.

The database file is created here when missing (0600, directory 0700), as ``connect`` would.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from ingestd.errors import DaemonError

PROC_LOCKS = Path("/proc/locks")


class DaemonLock:
    """The held lock; ``release()`` (or process exit) frees it.

    Call ``release`` only once the process's SQLite connections to the database are closed:
    closing any descriptor of a file drops the process's POSIX locks on it (SQLite's included).
    """

    def __init__(self, path: Path, fd: int, pid_file: Path) -> None:
        self.path = path
        self.pid_file = pid_file
        self._fd = fd

    def release(self) -> None:
        """Release the lock and close the descriptor (the files stay)."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


def lock_path(db_path: Path) -> Path:
    """``<db>.lock``, the holder's pid file, beside the database's real path (symlinks resolved)."""
    real = Path(os.path.realpath(db_path))
    return real.with_name(real.name + ".lock")


def holder_from_proc_locks(dev: int, ino: int, text: str) -> int | None:
    """The pid holding an ``flock`` on the inode ``(dev, ino)`` in ``/proc/locks`` text, or None. Pure.

    A line reads ``1: FLOCK  ADVISORY  WRITE 4242 fe:00:2146317 0 EOF`` (pid, then major:minor in
    hex and the inode); lines of waiters carry ``->`` and are skipped.
    """
    want = (os.major(dev), os.minor(dev), ino)
    for line in text.splitlines():
        fields = line.split()
        if "->" in fields or "FLOCK" not in fields:
            continue
        for i, f in enumerate(fields[1:], start=1):
            parts = f.split(":")
            if len(parts) != 3:
                continue
            try:
                got = (int(parts[0], 16), int(parts[1], 16), int(parts[2]))
                pid = int(fields[i - 1])
            except ValueError:
                continue
            if got == want and pid > 0:
                return pid
    return None


def _holder(fd: int, pid_file: Path) -> str:
    st = os.fstat(fd)
    with contextlib.suppress(OSError):
        pid = holder_from_proc_locks(st.st_dev, st.st_ino, PROC_LOCKS.read_text())
        if pid is not None:
            return str(pid)
    with contextlib.suppress(OSError):
        return pid_file.read_text().strip() or "unknown"
    return "unknown"


def acquire(db_path: Path) -> DaemonLock:
    """Take the exclusive daemon lock on the database file ``db_path`` names, without waiting.

    Args:
        db_path: any spelling of the database's path; the file is created (0600) if missing.

    Raises:
        DaemonError: another process holds it (its pid in the message when it can be found), or
            the file cannot be opened for writing.
    """
    real = Path(os.path.realpath(db_path))
    real.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(real, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise DaemonError(f"cannot open the database {db_path} for writing: {e.strerror}", path=str(db_path)) from None
    pid_file = lock_path(real)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(fd, pid_file)
        os.close(fd)
        raise DaemonError(
            f"another ingestd serve (pid {holder}) is already running on {db_path} (the same database file, "
            "whatever its path); stop it first or pass a different --db",
            lock=str(real),
            pid=holder,
        ) from None
    with contextlib.suppress(OSError):
        pfd = os.open(pid_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(pfd, f"{os.getpid()}\n".encode())
        finally:
            os.close(pfd)
    return DaemonLock(real, fd, pid_file)
