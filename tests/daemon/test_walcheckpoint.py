"""WAL checkpoints off the commit path: the write connection never checkpoints itself."""

from __future__ import annotations

import os
import random
from pathlib import Path

import apsw

from ingestd.core.records import NewLogRow
from ingestd.store.connection import Db, connect
from ingestd.store.migrate import migrate
from ingestd.store.walcheckpoint import WalCheckpointer
from ingestd.store.writer import apply_batch
from tests.support import wait_for


def _rows(start: int, n: int) -> list[NewLogRow]:
    # 2 KB of random hex each: payloads are stored compressed (migration 0013), and these must
    # still take WAL pages
    return [
        NewLogRow(
            f"k{i}",
            "hook",
            "Stop",
            b'{"pad":"' + random.Random(i).randbytes(1000).hex().encode() + b'"}',
            "2026-01-01T00:00:00.000Z",
            f"s{i % 5}",
            "hook",
        )
        for i in range(start, start + n)
    ]


def test_commits_leave_checkpoints_to_the_thread(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    cp = WalCheckpointer(lambda: connect(db), wal_pages=50)
    conn = cp.attach(migrate_conn(db))
    wal = Path(str(db) + "-wal")
    # nobody checkpoints yet: the WAL only grows past SQLite's own threshold's worth of pages
    written = 0
    while os.path.getsize(wal) <= 1000 * 4096:
        assert written < 20_000, "the WAL never grew past 1000 pages"
        apply_batch(conn, _rows(written, 100))
        written += 100
    cp.start()  # the WAL hook has signalled it meanwhile
    try:
        # with no write running, it copies every frame
        wait_for("a checkpoint of the whole WAL", lambda: cp.last is not None and cp.last[0] == cp.last[1] > 1000, 10)
        # everything was copied: the next write starts the WAL over from its beginning
        apply_batch(conn, _rows(10**6, 1))
        frames = int(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0][1])
        assert frames < 100
    finally:
        cp.stop()
        conn.close()
    check = Db(str(db))
    assert check.execute("SELECT count(*) FROM events_raw").fetchall() == [(written + 1,)]


def migrate_conn(db: Path) -> apsw.Connection:
    conn = connect(db)
    migrate(conn)
    return conn
