"""Connection policy (SPEC §6) and the apsw → IngestdError mapping."""

from __future__ import annotations

import stat
from pathlib import Path

import apsw
import pytest

from ingestd.errors import BusyError, IntegrityError, StorageError
from ingestd.store.connection import connect, default_db_path, translate, write_txn


def test_every_pragma_reads_back(tmp_path: Path) -> None:
    conn = connect(tmp_path / "x.db")
    assert conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
    assert conn.execute("PRAGMA foreign_keys").fetchall() == [(1,)]
    assert conn.execute("PRAGMA busy_timeout").fetchall() == [(5000,)]
    assert conn.execute("PRAGMA synchronous").fetchall() == [(2,)]


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
    assert type(translate(exc)) is expected


def test_write_txn_rolls_back_on_error(db: apsw.Connection) -> None:
    def boom(c: apsw.Connection) -> None:
        c.execute("INSERT INTO meta VALUES ('k', 'v')")
        c.execute("INSERT INTO meta VALUES ('k', 'v')")

    with pytest.raises(IntegrityError):
        write_txn(db, boom)
    assert db.execute("SELECT count(*) FROM meta").fetchall() == [(0,)]


def test_append_only_log(db: apsw.Connection) -> None:
    db.execute(
        "INSERT INTO events_raw (idempotency_key, source, event_type, payload, received_at, origin)"
        " VALUES ('k', 'hook', 'Stop', X'7B7D', '2025-01-01T00:00:00.000Z', 'hook')"
    )
    with pytest.raises(apsw.ConstraintError, match="append-only: rows are never updated"):
        db.execute("UPDATE events_raw SET event_type = 'x'")
    with pytest.raises(apsw.ConstraintError, match="append-only: rows are never deleted"):
        db.execute("DELETE FROM events_raw")
    assert db.execute("SELECT event_type FROM events_raw").fetchall() == [("Stop",)]
