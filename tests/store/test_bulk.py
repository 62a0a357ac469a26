"""The bulk token_usage path (migration 0015): the rollup ends exactly as the per-row triggers leave it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.store import rollup, upsert
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.upsert import UPSERT_TOKENS
from tests.stores.stores import SqliteStore
from tests.stores.test_rollup import BUCKETS, MODELS, PROMPTS, TIMES, apply, op

# a derive.Changes.token_usage row: (id, session_id, agent_id, message_id, model, the five buckets,
# is_compaction_baseline, occurred_at, claim_rank, prompt_tokens, speed, web_search_requests, inference_geo)
usage_row = st.tuples(
    st.just(None),
    st.sampled_from(["s1", "s2", "s3"]),
    st.sampled_from([None, "a1"]),
    st.sampled_from([f"msg{i}" for i in range(8)]),
    st.sampled_from(MODELS),
    *[st.integers(0, 10**6)] * len(BUCKETS),
    st.integers(0, 1),
    st.sampled_from(TIMES),
    st.integers(0, 2),
    st.sampled_from(PROMPTS),
    st.sampled_from(["", "standard", "fast"]),
    st.integers(0, 3),
    st.sampled_from(["", "us"]),
)
batch = st.tuples(st.just("batch"), st.lists(usage_row, min_size=1, max_size=30))

TABLES = (
    "SELECT * FROM token_usage ORDER BY id",
    f"SELECT {rollup.ROLLUP_COLUMNS} FROM token_usage_rollup ORDER BY 1, 2, 3, 4, 5, 6, 7",
)


def _db() -> apsw.Connection:
    conn = connect(":memory:")
    migrate(conn)
    return conn


def _run(conn: apsw.Connection, ops: list[tuple[Any, ...]], min_rows: int, tmp: Path) -> None:
    store = SqliteStore(conn, tmp)
    for o in ops:
        if o[0] != "batch":
            apply(store, o)
            continue
        old = upsert.BULK_MIN_ROWS
        upsert.BULK_MIN_ROWS = min_rows
        try:
            with conn:
                upsert.upsert_token_usage(conn, UPSERT_TOKENS, o[1])
        except apsw.ConstraintError:
            pass  # a refused batch (a time the guard rejects) leaves nothing: the transaction rolled back
        finally:
            upsert.BULK_MIN_ROWS = old
        assert conn.execute("SELECT count(*) FROM rollup_deferred").fetchall()[0][0] == 0


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(batch, op), min_size=1, max_size=20))
def test_bulk_equals_per_row_and_the_scan(tmp_path: Path, ops: list[tuple[Any, ...]]) -> None:
    per_row, grouped = _db(), _db()
    _run(per_row, ops, min_rows=10**9, tmp=tmp_path)  # every batch through the per-row triggers
    _run(grouped, ops, min_rows=1, tmp=tmp_path)  # every batch rolled up once
    for sql in TABLES:
        assert grouped.execute(sql).fetchall() == per_row.execute(sql).fetchall(), sql
    assert rollup.differences(grouped) == []


def test_a_price_change_is_refused_while_rows_are_deferred() -> None:
    conn = _db()
    with conn:
        conn.execute("INSERT INTO rollup_deferred (one, from_id) VALUES (1, 1)")
        with pytest.raises(apsw.ConstraintError, match="deferred"):
            conn.execute(
                "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
                " VALUES ('m', 'input', 1, '2025-01-01', 'test')"
            )
        conn.execute("DELETE FROM rollup_deferred")


def test_large_batch_takes_the_bulk_path_and_matches(tmp_path: Path) -> None:
    rows = [
        (
            None,
            f"s{i % 3}",
            None,
            f"m{i // 2}",
            MODELS[i % 2],
            i,
            2 * i,
            3,
            0,
            i % 7,
            0,
            TIMES[i % 4],
            0,
            i * 1000,
            "",
            0,
            "us" if i % 5 == 0 else "",
        )
        for i in range(1500)
    ]
    per_row, grouped = _db(), _db()
    with per_row:
        per_row.executemany(UPSERT_TOKENS, rows)
    calls: list[str] = []
    grouped.set_exec_trace(lambda _c, sql, _b: calls.append(sql) or True)
    with grouped:
        upsert.upsert_token_usage(grouped, UPSERT_TOKENS, rows)
    grouped.set_exec_trace(None)
    assert any(s.startswith("INSERT INTO token_usage_rollup") for s in calls)  # it was the bulk path
    for sql in TABLES:
        assert grouped.execute(sql).fetchall() == per_row.execute(sql).fetchall()
    assert rollup.differences(grouped) == []
