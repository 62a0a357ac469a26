"""WAL checkpoints off the commit path: the write connection never checkpoints itself."""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from ingestd.core.records import NewLogRow
from ingestd.daemon.walcheckpoint import WalCheckpointer
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.writer import apply_batch
from tests.support import wait_for


def _rows(start: int, n: int) -> list[NewLogRow]:
    return [
        NewLogRow(f"k{i}", "hook", "Stop", b"{}" + b" " * 2000, "2026-01-01T00:00:00.000Z", f"s{i % 5}", "hook")
        for i in range(start, start + n)
    ]


def test_commits_leave_checkpoints_to_the_thread(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    cp = WalCheckpointer(lambda: connect(db), wal_pages=50)
    conn = cp.attach(migrate_conn(db))
    wal = Path(str(db) + "-wal")
    # nobody checkpoints yet: the WAL only grows past SQLite's own threshold's worth of pages
    for i in range(0, 1500, 100):
        apply_batch(conn, _rows(i, 100))
    grown = os.path.getsize(wal)
    assert grown > 1000 * 4096
    cp.start()  # the WAL hook has signalled it meanwhile
    try:
        # with no write running, it copies every frame
        wait_for("a checkpoint of the whole WAL", lambda: cp.last is not None and cp.last[0] == cp.last[1] > 1000, 10)
        # everything was copied: the next write starts the WAL over from its beginning
        apply_batch(conn, _rows(6000, 1))
        frames = int(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0][1])
        assert frames < 100
    finally:
        cp.stop()
        conn.close()
    check = apsw.Connection(str(db))
    assert check.execute("SELECT count(*) FROM events_raw").fetchall() == [(1501,)]


def migrate_conn(db: Path) -> apsw.Connection:
    conn = connect(db)
    migrate(conn)
    return conn
