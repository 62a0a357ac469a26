"""The rollup equals a grouped scan of ``token_usage`` after any mutation sequence (SPEC §5.3).

``token_usage_rollup`` is kept by triggers (SQLite's and PL/pgSQL), re-grouping rows when a price row
appears, moves or goes; ``rollup_differences`` compares it with the scan
(``ingestd.store.rollup.scan_sql``, the same grouping in each store's functions).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.store.rollup import TIER_BITS
from tests.stores.stores import Refused, Store

MODELS = ["claude-opus-4-6", "claude-sonnet-4-5-20250929", "model-without-price"]
BUCKETS = ["input", "output", "cache_read", "cache_write_5m", "cache_write_1h"]
# quarter-hour edges, an offset spelling
TIMES = [
    "2025-03-01T10:00:00.000Z",
    "2025-03-01T10:14:59.999Z",
    "2025-03-01T10:15:00.000Z",
    "2025-06-01T00:00:00.000Z",
    "2025-06-01T02:00:00+02:00",
    "2025-09-30T23:59:59.999Z",
]
PRICE_TIMES = ["2025-03-01T10:15:00.000Z", "2025-06-01", "2026-01-01T00:00:00Z"]
# prompt sizes around the seeded long-context threshold (200,000) and the ones set below
PROMPTS = [0, 1_000, 199_999, 200_000, 200_001, 10**6]
SPEEDS = ["", "standard", "fast", "turbo"]
GEOS = ["", "us", "eu"]
COLUMN = {
    "update_model": "model",
    "update_time": "occurred_at",
    "update_session": "session_id",
    "update_prompt": "prompt_tokens",
    "update_speed": "speed",
    "update_searches": "web_search_requests",
    "update_geo": "inference_geo",
}

op = st.one_of(
    st.tuples(
        st.just("insert"),
        st.integers(0, 7),
        st.sampled_from(["s1", "s2"]),
        st.sampled_from(MODELS),
        st.sampled_from(BUCKETS),
        st.integers(0, 10**6),
        st.sampled_from(TIMES),
        st.sampled_from(PROMPTS),
        st.sampled_from(SPEEDS),
        st.integers(0, 5),
    ),
    st.tuples(st.just("update_tokens"), st.integers(0, 7), st.sampled_from(BUCKETS), st.integers(0, 10**6)),
    st.tuples(st.just("update_model"), st.integers(0, 7), st.sampled_from(MODELS)),
    st.tuples(st.just("update_time"), st.integers(0, 7), st.sampled_from(TIMES)),
    st.tuples(st.just("update_session"), st.integers(0, 7), st.sampled_from(["s1", "s2", "s3"])),
    st.tuples(st.just("update_prompt"), st.integers(0, 7), st.sampled_from(PROMPTS)),
    st.tuples(st.just("update_speed"), st.integers(0, 7), st.sampled_from(SPEEDS)),
    st.tuples(st.just("update_searches"), st.integers(0, 7), st.integers(0, 5)),
    st.tuples(st.just("update_geo"), st.integers(0, 7), st.sampled_from(GEOS)),
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
    # a tier appears, moves or goes: usage changes tier
    st.tuples(st.just("price_threshold"), st.sampled_from(MODELS), st.sampled_from([None, *PROMPTS])),
    # one bucket's tier alone: the message's tier bits differ by bucket
    st.tuples(
        st.just("price_bucket_threshold"),
        st.sampled_from(MODELS),
        st.sampled_from(BUCKETS),
        st.sampled_from([None, *PROMPTS]),
    ),
)

# A model's first price row by its key (no rowid or ctid: the one spelling both stores read).
_FIRST_PRICE = (
    "(model, bucket, effective_from) = (SELECT model, bucket, effective_from FROM model_pricing"
    " WHERE model = ? ORDER BY effective_from, bucket LIMIT 1)"
)


def insert_usage(store: Store, **row: Any) -> None:
    """A ``token_usage`` row (with the store's own further columns: the central host) or, when its
    message is there, its values (buckets not given are 0)."""
    cols = {**store.usage_columns(), **dict.fromkeys(BUCKETS, 0), **row}
    store.execute(
        f"INSERT INTO token_usage ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        " ON CONFLICT (message_id) DO UPDATE SET "
        + ", ".join(f"{c} = excluded.{c}" for c in cols if c not in ("message_id", *store.usage_columns())),
        list(cols.values()),
    )


def apply(store: Store, o: tuple[Any, ...]) -> None:
    """One mutation; a refused one (a key collision) changes nothing."""
    kind = o[0]
    try:
        if kind == "insert":
            _, m, s, model, bucket, tokens, t, prompt, speed, searches = o
            insert_usage(
                store,
                session_id=s,
                message_id=f"msg{m}",
                model=model,
                **{bucket: tokens},
                occurred_at=t,
                prompt_tokens=prompt,
                speed=speed,
                web_search_requests=searches,
            )
        elif kind == "update_tokens":
            store.execute(f"UPDATE token_usage SET {o[2]} = ? WHERE message_id = ?", (o[3], f"msg{o[1]}"))
        elif kind in COLUMN:
            store.execute(f"UPDATE token_usage SET {COLUMN[kind]} = ? WHERE message_id = ?", (o[2], f"msg{o[1]}"))
        elif kind == "delete":
            store.execute("DELETE FROM token_usage WHERE message_id = ?", (f"msg{o[1]}",))
        elif kind == "price_insert":
            store.execute(
                "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
                " VALUES (?, ?, ?, ?, 'test') ON CONFLICT (model, bucket, effective_from)"
                " DO UPDATE SET usd_per_mtok = excluded.usd_per_mtok",
                (o[1], o[2], o[4], o[3]),
            )
        elif kind == "price_update":
            store.execute("UPDATE model_pricing SET usd_per_mtok = ? WHERE model = ?", (o[2], o[1]))
        elif kind == "price_move":  # may collide with an existing key: refused, nothing changes
            store.execute(f"UPDATE model_pricing SET effective_from = ? WHERE {_FIRST_PRICE}", (o[2], o[1]))
        elif kind == "price_delete":
            store.execute(f"DELETE FROM model_pricing WHERE {_FIRST_PRICE}", (o[1],))
        elif kind == "price_threshold":
            store.execute(
                "UPDATE model_pricing SET long_context_threshold = ?, long_context_usd_per_mtok = usd_per_mtok * 2"
                " WHERE model = ?",
                (o[2], o[1]),
            )
        elif kind == "price_bucket_threshold":
            store.execute(
                "UPDATE model_pricing SET long_context_threshold = ?, long_context_usd_per_mtok = usd_per_mtok * 2"
                " WHERE model = ? AND bucket = ?",
                (o[3], o[1], o[2]),
            )
    except Refused:
        pass


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(op, min_size=1, max_size=20))
def test_rollup_equals_scan_after_every_step(store: Store, ops: list[tuple[Any, ...]]) -> None:
    with store.scratch():  # every example starts from the migrated store
        for o in ops:
            apply(store, o)
            assert store.rollup_differences() == [], o


def _rates(store: Store) -> dict[str, str]:
    return {str(r[0]): str(r[1]) for r in store.rows("SELECT slot, rate_effective_from FROM token_usage_rollup")}


def test_a_new_price_moves_existing_rows_from_its_first_instant(store: Store) -> None:
    for m, at in (("m1", "2025-05-01T00:00:00Z"), ("m2", "2025-07-01T00:00:00Z")):
        insert_usage(store, session_id="s", message_id=m, model="x-model", input=10**6, occurred_at=at)
    assert set(_rates(store).values()) == {""}  # the unpriced sentinel
    add = (
        "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
        " VALUES ('x-model', 'input', ?, ?, 't')"
    )
    store.execute(add, (2, "2025-05-01T00:00:00Z"))
    # inclusive: usage exactly at effective_from takes the new rate
    assert _rates(store) == {
        "2025-05-01T00:00Z": "2025-05-01T00:00:00.000Z",
        "2025-07-01T00:00Z": "2025-05-01T00:00:00.000Z",
    }
    store.execute(add, (3, "2025-06-01"))
    assert _rates(store) == {
        "2025-05-01T00:00Z": "2025-05-01T00:00:00.000Z",
        "2025-07-01T00:00Z": "2025-06-01T00:00:00.000Z",
    }
    assert store.rollup_differences() == []


def test_the_rollup_keys_tier_and_speed_and_sums_searches(store: Store) -> None:
    """Sonnet 4.5's seeded long-context tier (threshold 200,000 prompt tokens) applies from 2025-09-29:
    a prompt of exactly the threshold is standard; a message before that date has no tier."""
    son = "claude-sonnet-4-5-20250929"
    for m, at, prompt, speed, searches in (
        ("m1", "2025-10-01T00:00:00Z", 200_000, "", 2),
        ("m2", "2025-10-01T00:01:00Z", 200_001, "", 3),
        ("m3", "2025-10-01T00:02:00Z", 200_001, "", 4),
        ("m4", "2025-10-01T00:03:00Z", 5, "fast", 0),
        ("m5", "2025-09-01T00:00:00Z", 300_000, "", 0),
    ):
        insert_usage(
            store,
            session_id="s",
            message_id=m,
            model=son,
            output=10,
            occurred_at=at,
            prompt_tokens=prompt,
            speed=speed,
            web_search_requests=searches,
        )
    got = store.rows(
        "SELECT slot, tier, speed, output, row_count, web_search_requests FROM token_usage_rollup ORDER BY 1, 2, 3"
    )
    every = sum(TIER_BITS.values())  # the seeded tier prices every bucket
    assert got == [
        ("2025-09-01T00:00Z", 0, "", 10, 1, 0),
        ("2025-10-01T00:00Z", 0, "", 10, 1, 2),
        ("2025-10-01T00:00Z", 0, "fast", 10, 1, 0),
        ("2025-10-01T00:00Z", every, "", 20, 2, 7),
    ]
    store.execute("DELETE FROM token_usage WHERE message_id = 'm3'")
    store.execute("UPDATE token_usage SET speed = 'fast' WHERE message_id = 'm1'")
    assert store.rollup_differences() == []
    assert store.rows("SELECT sum(web_search_requests) FROM token_usage_rollup") == [(5,)]


def test_a_tier_on_one_bucket_sets_that_bucket_s_bit_only(store: Store) -> None:
    """Tier thresholds are per price row: a prompt over the output row's threshold alone sets the
    output bit; the message's other buckets stay standard."""
    store.execute(
        "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source,"
        " long_context_threshold, long_context_usd_per_mtok) VALUES"
        " ('x-tier', 'input', 1, '2025-01-01', 't', NULL, NULL),"
        " ('x-tier', 'output', 5, '2025-01-01', 't', 1000, 10)"
    )
    insert_usage(
        store,
        session_id="s",
        message_id="m",
        model="x-tier",
        input=7,
        output=3,
        occurred_at="2025-02-01T00:00:00Z",
        prompt_tokens=1001,
    )
    assert store.rows("SELECT tier, input, output FROM token_usage_rollup") == [(TIER_BITS["output"], 7, 3)]
    store.execute("UPDATE model_pricing SET long_context_threshold = 5000 WHERE model = 'x-tier'")
    assert store.rows("SELECT tier FROM token_usage_rollup") == [(0,)]
    assert store.rollup_differences() == []
