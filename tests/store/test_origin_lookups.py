"""Lookups by file and by session read the log's indexes (migration 0030), never the whole log."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestd.ingest import backfill
from ingestd.store import logrows, payload_blocks, titles
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate


@pytest.mark.parametrize(
    ("sql", "params", "index"),
    [
        (backfill._ANY_OF_ORIGIN_GEN, ("p/a.jsonl", 0), "log_rows_origin"),
        (backfill._SESSIONS_OF_ORIGIN, ("p/a.jsonl",), "log_rows_origin"),
        (titles._lines_of_file(1), ("p/a.jsonl", b'"uuid":"u"'), "log_rows_origin"),
        (
            titles._lines_of_file(titles.LEAVES_PER_READ),
            ("p/a.jsonl", *[b'"uuid":"u"'] * titles.LEAVES_PER_READ),
            "log_rows_origin",
        ),
        (payload_blocks._KEYS, ("p/a.jsonl", 0, 0, 100), "log_rows_origin"),
        (
            f"SELECT {logrows.LOG_COLUMNS} FROM events_raw WHERE session_id = ? AND id > ? ORDER BY id",
            ("s", 0),
            "log_rows_session",
        ),
    ],
)
def test_a_lookup_by_file_or_session_searches_an_index_not_the_whole_log(
    tmp_path: Path, sql: str, params: tuple[object, ...], index: str
) -> None:
    conn = connect(tmp_path / "i.db")
    migrate(conn)
    plan = " | ".join(str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    assert f"SEARCH r USING INDEX {index}" in plan or f"SEARCH r USING COVERING INDEX {index}" in plan, plan
    assert "SCAN r" not in plan, plan
