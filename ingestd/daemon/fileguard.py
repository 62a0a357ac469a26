"""The daemon knows its file: the database path still names the file it opened (SPEC §12).

``mv backup.db ingestd.db`` or ``rm ingestd.db*`` while the daemon runs leaves it writing to a file
no path names any more: every hook it acknowledged after that is gone at the next start. The guard
holds the identity (``st_dev``, ``st_ino``) of the file the daemon locked and compares it with a
``stat`` of the path (one system call, symlinks followed: what a restart would open):

- before every commit of the daemon's write connections (``guard_commits``, a commit hook): a
  mismatch raises ``FileLost``, so the transaction is rolled back and the hook is answered 503 with
  the reason: nothing is acknowledged that is not in the file the path names;
- every ``interval_s`` while the daemon runs (``watch``), so an idle daemon finds out too: then
  ``/api/health`` answers 503 with the reason (``status`` shows it), the daemon folds its WAL into
  its own file and empties it (``fold_wal``: the ``-wal`` beside the path is still the old file's,
  and SQLite would replay its frames onto the file that took the name, a restored backup, and
  corrupt it), the state file records the reason (``stop_reason``), and the daemon stops with a
  non-zero exit status: a service manager starts it again on the file the path names now
  (``Restart=on-failure``), a fresh start with that file's own log and checkpoints.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import apsw

from ingestd.errors import FileLost
from ingestd.http.health import Health
from ingestd.logs import get_logger
from ingestd.store.connection import Db

log = get_logger("ingestd.serve")

PROBLEM = "database file"
WATCH_INTERVAL_S = 1.0


class FileGuard:
    """The identity of the database file a daemon writes, checked against its path.

    Args:
        path: the database path as configured (a symlink is followed by each check).
        identity: ``(st_dev, st_ino)`` of the file the daemon opened and locked.
    """

    def __init__(self, path: Path, identity: tuple[int, int]) -> None:
        self.path = path
        self.identity = identity
        self.lost: str | None = None  # the first mismatch found, kept

    @classmethod
    def of(cls, path: Path) -> FileGuard:
        """A guard for the file ``path`` names now (``stat``). Raises OSError when it cannot be stat-ed."""
        st = os.stat(path)
        return cls(path, (st.st_dev, st.st_ino))

    def check(self) -> str | None:
        """Why ``path`` no longer names the file (one sentence), or None while it does. Never raises.
        The first reason found is kept in ``lost``."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            why = f"the database file {self.path} was deleted while the daemon ran"
        except OSError as e:
            why = f"the database file {self.path} cannot be checked ({e.strerror})"
        else:
            if (st.st_dev, st.st_ino) == self.identity:
                return None
            why = f"the database file {self.path} was replaced by another file while the daemon ran"
        if self.lost is None:
            self.lost = why + "; nothing more is written to the old one: restart the daemon"
        return self.lost


def guard_commits(conn: Db, guard: FileGuard, health: Health, part: str | None = None) -> Db:
    """``conn`` with a commit hook that refuses (``FileLost``, the transaction rolled back) when the
    path no longer names the file, and otherwise tells ``health`` that ``part`` made progress."""

    def committed() -> bool:
        why = guard.check()
        if why is not None:
            health.set_problem(PROBLEM, why)
            raise FileLost(why, path=str(guard.path), cause="FileLost")
        if part is not None:
            health.progress(part)
        return False  # False: let the commit go ahead

    conn.set_commit_hook(committed)
    return conn


def fold_wal(conn: Db) -> None:
    """Checkpoint the whole WAL into the connection's own (old) database file and truncate it to
    zero bytes, so the ``-wal`` beside the path holds no frame another file could be given."""
    conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)


async def watch(
    guard: FileGuard,
    health: Health,
    stop: asyncio.Event,
    on_lost: Callable[[str], Awaitable[None]],
    interval_s: float = WATCH_INTERVAL_S,
) -> None:
    """Check ``guard`` every ``interval_s`` until ``stop``; on a lost file report it to ``health``
    (problem ``database file``), log it, await ``on_lost(reason)`` once and return."""
    while not stop.is_set():
        why = guard.check()
        if why is not None:
            health.set_problem(PROBLEM, why)
            log.error("database_file_lost", db=str(guard.path), reason=why)
            await on_lost(why)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
