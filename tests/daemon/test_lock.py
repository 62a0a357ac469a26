"""One daemon per database, however its path is spelt: the lock is on the file (SPEC §12)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core import ledger
from ingestd.daemon import lock
from ingestd.errors import DaemonError
from ingestd.store.connection import connect
from ingestd.store.migrate import MIGRATIONS_DIR, migrate, status


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


def test_a_hard_link_and_a_relative_path_find_the_same_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # regression: the lock file sat beside the path, so a hard link let a second
    # daemon start, each with its own WAL, and the database was corrupted within seconds
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    db = tmp_path / "a" / "x.db"
    held = lock.acquire(db)
    os.link(db, tmp_path / "b" / "hard.sqlite")
    monkeypatch.chdir(tmp_path / "b")
    for other in (Path("hard.sqlite"), Path("../a/x.db")):
        with pytest.raises(DaemonError, match=f"pid {os.getpid()}"):
            lock.acquire(other)
    held.release()
    lock.acquire(Path("hard.sqlite")).release()


def test_the_holders_pid_comes_from_the_kernels_lock_table(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "held"
            (tmp_path / "x.db.lock").write_text("")  # the pid file says nothing: the kernel's table does
            os.link(db, tmp_path / "hard.db")
            with pytest.raises(DaemonError, match=f"pid {child.pid}\\)") as e:
                lock.acquire(tmp_path / "hard.db")
            assert e.value.context["pid"] == str(child.pid)
        finally:
            child.kill()
    lock.acquire(tmp_path / "hard.db").release()  # the kernel dropped the dead holder's lock


CHILD = "import sys; from pathlib import Path; from ingestd.daemon import lock\n" + (
    "h = lock.acquire(Path(sys.argv[1])); print('held', flush=True); sys.stdin.read()"
)


def test_proc_locks_parsing() -> None:
    """The lock's holder is read from /proc/locks by device and inode, blocked waiters (``->``) ignored."""
    dev = os.makedev(0xFE, 0)
    text = (
        "1: POSIX  ADVISORY  WRITE 11 fe:00:77 1073741824 1073741824\n"
        "2: FLOCK  ADVISORY  WRITE 4242 fe:00:77 0 EOF\n"
        "2: -> FLOCK  ADVISORY  WRITE 5151 fe:00:77 0 EOF\n"
        "3: FLOCK  ADVISORY  WRITE 99 fe:01:77 0 EOF\n"
    )
    assert lock.holder_from_proc_locks(dev, 77, text) == 4242
    assert lock.holder_from_proc_locks(dev, 78, text) is None
    assert lock.holder_from_proc_locks(os.makedev(0xFE, 1), 77, text) == 99


def test_pending_migrations_are_not_applied_under_a_serving_daemon(tmp_path: Path) -> None:
    """A daemon started by an older ingestd still serves the database an upgrade left behind: a
    command of the newer one that would migrate it (``migrate``, ``ingest``) refuses, naming the
    daemon's pid and the migrations, and changes nothing; once the daemon is gone it migrates."""
    db = tmp_path / "x.db"
    older = tmp_path / "migrations-older"
    older.mkdir()
    for pin in ledger.PINS[:-1]:
        shutil.copy(MIGRATIONS_DIR / f"{pin.stem}.sql", older / f"{pin.stem}.sql")
    conn = connect(db)
    migrate(conn, directory=older, pins=ledger.PINS[:-1])
    conn.close()
    assert lock.serving_pid(db) is None
    held = lock.acquire(db)
    try:
        assert lock.serving_pid(db) == str(os.getpid())
        for argv in (["migrate"], ["ingest", "--projects", str(tmp_path)]):
            got = CliRunner().invoke(cli, [*argv, "--db", str(db)])
            assert got.exit_code != 0, got.output
            assert f"a daemon (pid {os.getpid()}) is serving it" in got.output, got.output
            assert ledger.PINS[-1].stem in got.output
            conn = connect(db, readonly=True)
            assert [p.stem for p in status(conn).pending] == [ledger.PINS[-1].stem]
            conn.close()
    finally:
        held.release()
    got = CliRunner().invoke(cli, ["migrate", "--db", str(db)])
    assert got.exit_code == 0, got.output
    assert f"applied {ledger.PINS[-1].stem}" in got.output
