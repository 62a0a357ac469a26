"""The log has no origin index (migration 0017): lookups by file read a range of the key index."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestd.ingest import backfill
from ingestd.store import titles
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        (backfill._ANY_OF_ORIGIN_GEN, ("j:a:0:", "j:a:0:\x7f", "p/a.jsonl", 0)),
        (backfill._SESSIONS_OF_ORIGIN, ("j:a:", "j:a:\x7f", "p/a.jsonl")),
        (titles._LINES_OF_FILE, ("j:a:", "j:a:\x7f", "p/a.jsonl", b'"uuid":"u"')),
    ],
)
def test_a_lookup_by_file_searches_the_key_index_not_the_whole_log(
    tmp_path: Path, sql: str, params: tuple[object, ...]
) -> None:
    conn = connect(tmp_path / "i.db")
    migrate(conn)
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "events_raw_origin" not in indexes
    plan = " | ".join(str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    assert "SEARCH events_raw USING" in plan and "(idempotency_key>? AND idempotency_key<?)" in plan, plan
    assert "SCAN events_raw" not in plan, plan
