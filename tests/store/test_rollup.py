"""The rollup equals a grouped scan after any mutation sequence (SPEC §5.3)."""

from __future__ import annotations

from pathlib import Path

import apsw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.store import rollup
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.rollup_cases import BUCKETS, MODELS, PRICE_TIMES, TIMES

PROMPTS = [0, 199_999, 200_000, 200_001, 10**6]

op = st.one_of(
    st.tuples(
        st.just("insert"),
        st.integers(0, 7),
        st.sampled_from(["s1", "s2"]),
        st.sampled_from(MODELS),
        st.sampled_from(BUCKETS),
        st.integers(0, 10**6),
        st.sampled_from(TIMES),
    ),
    st.tuples(st.just("update_tokens"), st.integers(0, 7), st.integers(0, 10**6)),
    st.tuples(st.just("update_model"), st.integers(0, 7), st.sampled_from(MODELS)),
    st.tuples(st.just("update_time"), st.integers(0, 7), st.sampled_from(TIMES)),
    st.tuples(st.just("update_session"), st.integers(0, 7), st.sampled_from(["s1", "s2", "s3"])),
    st.tuples(st.just("delete"), st.integers(0, 7)),
    st.tuples(
        st.just("price_insert"),
        st.sampled_from(MODELS),
        st.sampled_from(BUCKETS),
        st.sampled_from(PRICE_TIMES),
        st.integers(0, 100),
    ),
    st.tuples(st.just("price_update"), st.sampled_from(MODELS), st.integers(0, 100)),
    st.tuples(st.just("price_move"), st.sampled_from(MODELS), st.sampled_from(PRICE_TIMES)),
    st.tuples(st.just("price_delete"), st.sampled_from(MODELS)),
    # the price dimensions of migration 0011: per message facts and a price row's threshold
    st.tuples(st.just("update_prompt"), st.integers(0, 7), st.sampled_from(PROMPTS)),
    st.tuples(st.just("update_speed"), st.integers(0, 7), st.sampled_from(["", "standard", "fast", "turbo"])),
    st.tuples(st.just("update_searches"), st.integers(0, 7), st.integers(0, 5)),
    st.tuples(st.just("price_threshold"), st.sampled_from(MODELS), st.sampled_from([None, *PROMPTS])),
)


def apply(conn: apsw.Connection, o: tuple[object, ...]) -> None:
    kind = o[0]
    try:
        if kind == "insert":
            _, m, s, model, bucket, tokens, t = o
            conn.execute(
                "INSERT INTO token_usage (session_id, message_id, model, bucket, tokens, occurred_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (message_id, bucket) DO UPDATE SET"
                " tokens = excluded.tokens, model = excluded.model, occurred_at = excluded.occurred_at",
                (s, f"msg{m}", model, bucket, tokens, t),
            )
        elif kind == "update_tokens":
            conn.execute("UPDATE token_usage SET tokens = ? WHERE message_id = ?", (o[2], f"msg{o[1]}"))
        elif kind == "update_model":
            conn.execute("UPDATE token_usage SET model = ? WHERE message_id = ?", (o[2], f"msg{o[1]}"))
        elif kind == "update_time":
            conn.execute("UPDATE token_usage SET occurred_at = ? WHERE message_id = ?", (o[2], f"msg{o[1]}"))
        elif kind == "update_session":
            conn.execute("UPDATE token_usage SET session_id = ? WHERE message_id = ?", (o[2], f"msg{o[1]}"))
        elif kind == "delete":
            conn.execute("DELETE FROM token_usage WHERE message_id = ?", (f"msg{o[1]}",))
        elif kind == "price_insert":
            conn.execute(
                "INSERT OR REPLACE INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
                " VALUES (?, ?, ?, ?, 'test')",
                (o[1], o[2], o[4], o[3]),
            )
        elif kind == "price_update":
            conn.execute("UPDATE model_pricing SET usd_per_mtok = ? WHERE model = ?", (o[2], o[1]))
        elif kind == "price_move":
            # may collide with an existing key: that is a refused mutation, nothing changes
            conn.execute(
                "UPDATE model_pricing SET effective_from = ? WHERE rowid = (SELECT min(rowid) FROM model_pricing"
                " WHERE model = ?)",
                (o[2], o[1]),
            )
        elif kind in ("update_prompt", "update_speed", "update_searches"):
            col = {"update_prompt": "prompt_tokens", "update_speed": "speed", "update_searches": "web_search_requests"}
            conn.execute(f"UPDATE token_usage SET {col[str(kind)]} = ? WHERE message_id = ?", (o[2], f"msg{o[1]}"))
        elif kind == "price_threshold":
            conn.execute(
                "UPDATE model_pricing SET long_context_threshold = ?2, long_context_usd_per_mtok = usd_per_mtok * 2"
                " WHERE rowid = (SELECT max(rowid) FROM model_pricing WHERE model = ?1)",
                (o[1], o[2]),
            )
        elif kind == "price_delete":
            conn.execute(
                "DELETE FROM model_pricing WHERE rowid = (SELECT max(rowid) FROM model_pricing WHERE model = ?)",
                (o[1],),
            )
    except apsw.ConstraintError:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(op, min_size=1, max_size=25))
def test_rollup_equals_scan_after_every_step(tmp_path: Path, ops: list[tuple[object, ...]]) -> None:
    conn = connect(":memory:")
    migrate(conn)
    for o in ops:
        apply(conn, o)
        assert rollup.differences(conn) == [], o


def test_new_price_moves_existing_rows_and_reprices(db: apsw.Connection) -> None:
    db.execute(
        "INSERT INTO token_usage (session_id, message_id, model, bucket, tokens, occurred_at)"
        " VALUES ('s', 'm1', 'x-model', 'input', 1000000, '2025-05-01T00:00:00Z'),"
        "        ('s', 'm2', 'x-model', 'input', 1000000, '2025-07-01T00:00:00Z')"
    )
    rates = dict(db.execute("SELECT slot, rate_effective_from FROM token_usage_rollup").fetchall())
    assert set(rates.values()) == {""}  # unpriced sentinel
    db.execute(
        "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
        " VALUES ('x-model', 'input', 2, '2025-05-01T00:00:00Z', 't')"
    )
    # inclusive boundary: usage exactly at effective_from takes the new rate
    rates = dict(db.execute("SELECT slot, rate_effective_from FROM token_usage_rollup").fetchall())
    assert rates == {
        "2025-05-01T00:00Z": "2025-05-01T00:00:00.000Z",
        "2025-07-01T00:00Z": "2025-05-01T00:00:00.000Z",
    }
    db.execute(
        "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
        " VALUES ('x-model', 'input', 3, '2025-06-01', 't')"
    )
    rates = dict(db.execute("SELECT slot, rate_effective_from FROM token_usage_rollup").fetchall())
    assert rates["2025-07-01T00:00Z"] == "2025-06-01T00:00:00.000Z"
    assert rates["2025-05-01T00:00Z"] == "2025-05-01T00:00:00.000Z"
    assert rollup.differences(db) == []


def test_rebuild_restores_a_tampered_rollup(db: apsw.Connection) -> None:
    db.execute(
        "INSERT INTO token_usage (session_id, message_id, model, bucket, tokens, occurred_at)"
        " VALUES ('s', 'm1', 'claude-opus-4-6', 'input', 10, '2025-05-01T00:00:00Z')"
    )
    db.execute("UPDATE token_usage_rollup SET tokens = 11")
    assert rollup.differences(db)
    rollup.rebuild(db)
    assert rollup.differences(db) == []
