"""One daemon per database."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestd.daemon import lock
from ingestd.errors import DaemonError


def test_second_lock_refuses_with_a_clear_message_then_frees(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    held = lock.acquire(db)
    with pytest.raises(DaemonError, match="already running"):
        lock.acquire(db)
    held.release()
    lock.acquire(db).release()


def test_another_spelling_of_the_same_database_finds_the_same_lock(tmp_path: Path) -> None:
    # regression: the lock sat beside the path as given, so a symlink to the database
    # (or to its directory) let a second daemon start on the same file
    (tmp_path / "data").mkdir()
    db = tmp_path / "data" / "x.db"
    db.touch()
    (tmp_path / "link.db").symlink_to(db)
    (tmp_path / "dirlink").symlink_to(tmp_path / "data")
    held = lock.acquire(db)
    for other in (tmp_path / "link.db", tmp_path / "dirlink" / "x.db", tmp_path / "data" / ".." / "data" / "x.db"):
        with pytest.raises(DaemonError, match="already running"):
            lock.acquire(other)
    held.release()
