"""One daemon per database: an ``flock`` on the database file itself, held for the process lifetime.

The lock is on the file's identity (SPEC §12), not on a path: every spelling of the same
database (a symlink, a relative path, a hard link, a bind mount) opens the same inode, and the
kernel refuses a second exclusive ``flock`` on it whichever path reached it. (A lock file beside
the path let two daemons run through a hard link, each with its own WAL, and the database was
corrupted within seconds.) SQLite's own locks are POSIX byte-range locks, which on Linux are
independent of ``flock``. The kernel drops the lock when the process dies (kill -9 included), so
nothing stale ever blocks a restart.

A second ``flock`` is held on ``<db>.lock`` beside the database's real path (the holder's pid is
written in it): a lock on the database's inode alone does not survive ``mv backup.db ingestd.db``
(a new inode at the path, unlocked), and a second daemon could start on the same path while the
first still ran. The lock file stays when the database file is replaced, so the second daemon is
refused until the first has seen the replace and stopped (``ingestd.daemon.fileguard``).

The refusal names the holder's pid: from ``/proc/locks`` (the kernel's table, by device and
inode, so it is right however the holder spelt the path), else from ``<db>.lock``.

The database file is created here when missing (0600, directory 0700), as ``connect`` would; a
start that then fails (the port taken, an unsafe file) calls ``discard``, which removes what the
lock created while it is still empty: a refused start leaves no database behind (docs/reference.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from ingestd.errors import DaemonError
from ingestd.files import read_small

PROC_LOCKS = Path("/proc/locks")
PID_MAX_BYTES = 64  # a pid and a newline


class DaemonLock:
    """The held lock; ``release()`` (or process exit) frees it.

    Call ``release`` only once the process's SQLite connections to the database are closed:
    closing any descriptor of a file drops the process's POSIX locks on it (SQLite's included).
    """

    def __init__(self, path: Path, fd: int, pid_file: Path, made: tuple[Path, ...] = (), pid_fd: int = -1) -> None:
        self.path = path
        self.pid_file = pid_file
        self._fd = fd
        self._pid_fd = pid_fd  # the lock file's, locked too (-1: none)
        self._made = made  # the database file, then the directories above it, that acquire created
        st = os.fstat(fd)
        self.identity = (st.st_dev, st.st_ino)  # of the database file locked

    def release(self) -> None:
        """Release the locks and close the descriptors (the files stay)."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
        self._close_pid_fd()

    def _close_pid_fd(self) -> None:
        if self._pid_fd >= 0:
            os.close(self._pid_fd)  # drops its flock
            self._pid_fd = -1

    def discard(self) -> None:
        """Release the lock, removing what ``acquire`` created if it is still unused.

        For a start that failed after the lock: the database file, its pid file and the directories
        made for it are removed when the file is still empty with no ``-wal`` beside it, and no other
        process holds the lock (it is re-taken to be sure when already released). Anything else
        stays. Side effects: unlinks files, removes empty directories.
        """
        if not self._made:
            self.release()
            return
        fd, self._fd = self._fd, -1
        if fd < 0:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                if fd >= 0:
                    os.close(fd)
                return
        try:
            if _unused(fd, self.path):
                for f in (self.path, self.pid_file):
                    with contextlib.suppress(OSError):
                        os.unlink(f)
                for d in self._made[1:]:
                    with contextlib.suppress(OSError):
                        os.rmdir(d)
        finally:
            os.close(fd)
            self._close_pid_fd()
            self._made = ()


def _unused(fd: int, path: Path) -> bool:
    """The file open at ``fd`` is still the one at ``path``, empty, and has no WAL beside it."""
    wal = path.with_name(path.name + "-wal")
    return _same_file(fd, path) and os.fstat(fd).st_size == 0 and not wal.exists()


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
    with contextlib.suppress(UnicodeDecodeError):
        return (read_small(pid_file, PID_MAX_BYTES, "pid file") or b"").decode().strip() or "unknown"
    return "unknown"


def serving_pid(db_path: Path) -> str | None:
    """The pid of the daemon holding the lock on the database file ``db_path`` names ("unknown"
    when it cannot be found), or None when none holds it (or the file cannot be opened). Takes no
    lock that outlives the call: a shared ``flock`` tried without waiting, released at once."""
    try:
        fd = os.open(os.path.realpath(db_path), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return _holder(fd, lock_path(db_path))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def acquire(db_path: Path) -> DaemonLock:
    """Take the exclusive daemon lock on the database file ``db_path`` names, without waiting.

    Args:
        db_path: any spelling of the database's path; the file is created (0600) if missing.

    Raises:
        DaemonError: another process holds it (its pid in the message when it can be found), or
            the file cannot be opened for writing.
    """
    real = Path(os.path.realpath(db_path))
    missing = [d for d in (real.parent, *real.parent.parents) if not d.exists()]
    real.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    for _attempt in range(3):
        fd, created = _open(real, db_path)
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
        if _same_file(fd, real):
            break
        os.close(fd)  # a failed start removed the file between our open and our lock: open it again
    else:
        raise DaemonError(f"the database {db_path} keeps being replaced while it is locked", path=str(db_path))
    try:
        pfd = _lock_file(pid_file, db_path)
    except BaseException:
        os.close(fd)
        raise
    return DaemonLock(real, fd, pid_file, (real, *missing) if created else (), pfd)


def _lock_file(pid_file: Path, db_path: Path) -> int:
    """Take the ``flock`` on the lock file beside the database (created 0600), writing this pid in
    it; its descriptor. A lock file that cannot be opened (a read-only directory) holds nothing: -1.

    Raises:
        DaemonError: another process holds it (a daemon whose database file was replaced under it).
    """
    try:
        pfd = os.open(pid_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError:
        return -1
    try:
        fcntl.flock(pfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(pfd, pid_file)
        os.close(pfd)
        raise DaemonError(
            f"another ingestd serve (pid {holder}) is already running on {db_path} (its lock file {pid_file} is "
            "held: the database file was replaced while it ran); stop it first or pass a different --db",
            lock=str(pid_file),
            pid=holder,
        ) from None
    with contextlib.suppress(OSError):
        os.ftruncate(pfd, 0)
        os.pwrite(pfd, f"{os.getpid()}\n".encode(), 0)
    return pfd


def _open(real: Path, db_path: Path) -> tuple[int, bool]:
    """Open (creating, 0600) the database file: its descriptor, and whether this call created it."""
    try:
        try:
            return os.open(real, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), True
        except FileExistsError:
            return os.open(real, os.O_RDWR | os.O_CLOEXEC), False
    except OSError as e:
        raise DaemonError(f"cannot open the database {db_path} for writing: {e.strerror}", path=str(db_path)) from None


def _same_file(fd: int, path: Path) -> bool:
    """``path`` still names the file open at ``fd``."""
    try:
        st, now = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)
