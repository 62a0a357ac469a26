"""A log made before its strings were interned (migration 0030) comes through it row for row: the
view ``events_raw`` gives every column and payload byte it had, the keys included, and reading the
same corpus again appends nothing.

``fixtures/upgrade/main-0021.db.gz`` was made by main at f276b46 (schema 0021) from the real corpus.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from ingestd.ingest.backfill import ingest_roots
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.payload import decode

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "upgrade" / "main-0021.db.gz"
CORPUS = ROOT.parent / "shared" / "corpus" / "claude-projects"
COLUMNS = (
    "id, idempotency_key, source, event_type, received_at, session_id, origin, origin_gen, origin_offset, codec,"
    " payload"
)


def _log(conn: Any) -> list[tuple[Any, ...]]:
    return [(*r[:10], decode(conn, r[9], r[10])) for r in conn.execute(f"SELECT {COLUMNS} FROM events_raw ORDER BY id")]


def test_the_log_is_the_same_row_for_row_after_the_migration(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    db.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    conn = connect(db)
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'events_raw'").fetchall() == [("table",)]
    before = _log(conn)
    lines = sum(1 for r in before if r[2] == "jsonl")
    migrate(conn)
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'events_raw'").fetchall() == [("view",)]
    assert _log(conn) == before
    # every transcript line keeps 8 bytes instead of its key; no origin or session is stored twice
    assert conn.execute("SELECT count(*) FROM log_rows WHERE key IS NULL").fetchall() == [(lines,)]
    assert conn.execute("SELECT count(*) FROM log_origins").fetchall() == [(len({r[6] for r in before}),)]
    assert conn.execute("SELECT count(*) FROM log_sessions").fetchall() == [
        (len({r[5] for r in before if r[5] is not None}),)
    ]
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


def test_reading_the_corpus_again_after_the_migration_appends_nothing(tmp_path: Path) -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"real corpus not found at {CORPUS}")
    db = tmp_path / "old.db"
    db.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    conn = connect(db)
    migrate(conn)
    n = conn.execute("SELECT count(*) FROM events_raw").fetchall()[0][0]
    conn.execute("DELETE FROM ingest_checkpoints")  # read every file again from its first byte
    got = ingest_roots(conn, [CORPUS], now="2026-12-03T00:00:00.000Z")
    assert got.lines >= n and got.rows_inserted == 0
    assert conn.execute("SELECT count(*) FROM events_raw").fetchall()[0][0] == n
    conn.close()
