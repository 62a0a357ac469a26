"""Connection policy (SPEC §6) and the apsw → IngestdError mapping."""

from __future__ import annotations

import stat
from pathlib import Path

import apsw
import pytest

from ingestd.errors import BusyError, IntegrityError, StorageError
from ingestd.store.connection import JOURNAL_SIZE_LIMIT_BYTES, connect, default_db_path, translate, write_txn


def test_every_pragma_reads_back(tmp_path: Path) -> None:
    """Every connection pragma of the policy reads back as set: WAL, foreign keys, busy timeout,
    synchronous=FULL, journal size limit."""
    conn = connect(tmp_path / "x.db")
    assert conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
    assert conn.execute("PRAGMA foreign_keys").fetchall() == [(1,)]
    assert conn.execute("PRAGMA busy_timeout").fetchall() == [(5000,)]
    assert conn.execute("PRAGMA synchronous").fetchall() == [(2,)]
    assert conn.execute("PRAGMA journal_size_limit").fetchall() == [(JOURNAL_SIZE_LIMIT_BYTES,)]


def test_a_large_transaction_does_not_leave_its_wal_behind(tmp_path: Path) -> None:
    """The -wal file goes back to ``JOURNAL_SIZE_LIMIT_BYTES`` once a checkpoint resets it (a
    daemon keeps its connection open: SQLite would keep the WAL at its largest size)."""
    db = tmp_path / "x.db"
    conn = connect(db)
    conn.execute("CREATE TABLE t (b BLOB)")
    big = 3 * JOURNAL_SIZE_LIMIT_BYTES
    write_txn(conn, lambda c: c.executemany("INSERT INTO t VALUES (randomblob(65536))", [()] * (big // 65536)))
    wal = tmp_path / "x.db-wal"
    assert wal.stat().st_size > big
    conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
    write_txn(conn, lambda c: c.execute("INSERT INTO t VALUES (x'00')"))
    assert wal.stat().st_size <= JOURNAL_SIZE_LIMIT_BYTES


def test_fresh_database_is_private(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "x.db"
    connect(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_default_path_follows_xdg() -> None:
    assert default_db_path({"XDG_DATA_HOME": "/d"}) == Path("/d/ingestd/ingestd.db")
    assert default_db_path({"HOME": "/h"}) == Path("/h/.local/share/ingestd/ingestd.db")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (apsw.BusyError("busy"), BusyError),
        (apsw.LockedError("locked"), BusyError),
        (apsw.ConstraintError("unique"), IntegrityError),
        (apsw.SQLError("syntax"), StorageError),
        (apsw.IOError("disk"), StorageError),
    ],
)
def test_error_mapping(exc: BaseException, expected: type[StorageError]) -> None:
    """Each apsw error class maps to its ingestd error (the one translation table)."""
    assert type(translate(exc)) is expected


def test_write_txn_rolls_back_on_error(db: apsw.Connection) -> None:
    def boom(c: apsw.Connection) -> None:
        c.execute("INSERT INTO meta VALUES ('k', 'v')")
        c.execute("INSERT INTO meta VALUES ('k', 'v')")

    with pytest.raises(IntegrityError):
        write_txn(db, boom)
    assert db.execute("SELECT count(*) FROM meta").fetchall() == [(0,)]
