"""Checks the daemon runs on its own files and database (SPEC §10), and reports to ``Health``.

- ``check_files``: before the lock, the ssh-like checks (``ingestd.files``) on the database,
  its ``-wal``, ``-shm`` and ``.lock``, the backups directory and its backups.
- ``check_at_start``: ``PRAGMA quick_check`` once, in the background (a large database must not
  delay the receiver), interrupted at shutdown; a finding makes ``/api/health`` 503.
- ``report_commits``: a connection's commit hook telling ``Health`` that a part made progress.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import apsw

from ingestd import files
from ingestd.errors import StorageError
from ingestd.http.health import Health
from ingestd.logs import get_logger
from ingestd.retention.backup import default_backup_dir
from ingestd.store.connection import Db, connect, require_writable

log = get_logger("ingestd.serve")


def check_files(db_path: Path, backup_dir: Path | None) -> None:
    """The ssh-like file checks (``ingestd.files``) on the files the daemon will write.

    The database, its ``-wal``, ``-shm`` and ``.lock``, the backups directory (``backup_dir``; None:
    the default, next to ``db_path`` as given, link or not) and its backups (the token file is
    checked where it is read, ``auth.load_token``). Reads only.

    Raises:
        ConfigError: naming each unsafe file and the command that fixes it.
        StorageError: this user cannot write the database or its ``-wal`` / ``-shm`` (``require_writable``).
    """
    backups = backup_dir or default_backup_dir(db_path)  # where backups go: ``backup_dir_from``'s default
    files.require_safe(files.store_problems(db_path, backups))
    require_writable(db_path)


def check_ship_to(url: str | None) -> None:
    """The ``ship_to`` setting, when set, is a PostgreSQL connection string without a password.

    Checked before the lock, like the bind: a daemon that started with a store it can never ship to
    said so only in its log, once, and then never shipped.

    Raises:
        ConfigError: ``ingestd.central.pg.check_url``'s refusal (not a connection string, or a
            password in it; the message never repeats the password).
    """
    if url:
        from ingestd.central.pg import check_url

        check_url(url)


def quick_check(conn: Db) -> str | None:
    """``PRAGMA quick_check`` on ``conn``: None when it says ok, else its first findings (one line).

    Raises:
        apsw.Error: the check could not run (interrupted at shutdown, unreadable file).
    """
    found = [str(r[0]) for r in conn.execute("PRAGMA quick_check(10)")]
    return None if found == ["ok"] else "; ".join(found)


async def check_at_start(db_path: Path, health: Health, stop: asyncio.Event) -> None:
    """Run ``quick_check`` once, off the loop, reporting to ``health``; interrupted at shutdown."""
    try:
        conn = connect(db_path, readonly=True)
    except StorageError as e:
        health.set_problem("quick_check", f"could not open the database to check it: {e}")
        return
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.run_in_executor(None, quick_check, conn)
    waiter: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([fut, waiter], return_when=asyncio.FIRST_COMPLETED)
        if not fut.done():
            conn.interrupt()
        try:
            found = await fut
        except apsw.Error as e:
            if stop.is_set():
                return
            found = f"could not run: {e}"
        if found is not None:
            log.error("quick_check_failed", db=str(db_path), found=found)
            health.set_problem("quick_check", f"PRAGMA quick_check failed at start: {found}")
    finally:
        waiter.cancel()
        conn.close()


def report_commits(conn: Db, health: Health, part: str) -> Db:
    """``conn`` with a commit hook telling ``health`` that ``part`` made progress (a long pass is not a stall)."""

    def committed() -> bool:
        health.progress(part)
        return False  # False: let the commit go ahead

    conn.set_commit_hook(committed)
    return conn
