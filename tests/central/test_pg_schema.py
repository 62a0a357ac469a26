"""The central store's schema on a real PostgreSQL: ledger and tamper rules, append-only log,
the trigger-exact rollup (the SPEC §5.3 equivalence property suite, run against PostgreSQL)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.central import migrate as mig
from ingestd.central.check import rollup_differences, verify_checks
from ingestd.core import ledger
from ingestd.errors import MigrationError
from tests.rollup_cases import BUCKETS, MODELS, PRICE_TIMES, TIMES

HOSTS = ["host-a", "host-b"]
# prompt sizes around the seeded long-context threshold (200,000) and the ones set below
PROMPTS = [0, 1_000, 200_000, 200_001, 10**6]
SPEEDS = ["", "fast", "turbo"]


@pytest.fixture
def pg(pg_url: str) -> Any:
    conn = psycopg.connect(pg_url, autocommit=True)
    mig.migrate(conn)
    yield conn
    conn.close()


def test_migrate_applies_each_pin_once_and_a_second_run_nothing(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        assert [p.id for p in mig.migrate(conn)] == [p.id for p in ledger.PG_PINS]
        assert mig.migrate(conn) == []
        rows = conn.execute("SELECT id, name, checksum FROM schema_version ORDER BY id").fetchall()
        compression = conn.execute(
            "SELECT attcompression FROM pg_attribute WHERE attrelid = 'events_raw'::regclass AND attname = 'payload'"
        ).fetchone()
    assert rows == [(p.id, p.name, p.sha256) for p in ledger.PG_PINS]
    assert compression == ("l",)  # lz4 (this server has it)


def test_pins_match_the_files_shipped() -> None:
    p = ledger.plan(mig.files_on_disk(mig.PG_MIGRATIONS_DIR), [], ledger.PG_PINS)
    assert p.problems == ()


def test_tampered_migration_file_is_refused_before_anything_runs(pg_url: str, tmp_path: Path) -> None:
    d = tmp_path / "pg"
    shutil.copytree(mig.PG_MIGRATIONS_DIR, d)
    f = d / "0002_pricing_seed.sql"
    f.write_text(f.read_text() + "\n-- a quiet edit\n")
    with psycopg.connect(pg_url) as conn:
        with pytest.raises(MigrationError, match=r"0002_pricing_seed\.sql was edited after release"):
            mig.migrate(conn, directory=d)
        # nothing ran: not even the untouched first migration
        assert conn.execute("SELECT to_regclass('schema_version')").fetchone() == (None,)


def test_tampered_recorded_checksum_is_refused(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        mig.migrate(conn)
        conn.execute("UPDATE schema_version SET checksum = repeat('0', 64) WHERE id = 1")
        conn.commit()
        with pytest.raises(MigrationError, match="applied migration 0001_central has recorded checksum"):
            mig.migrate(conn)
        checks = {c.name: c for c in verify_checks(conn)}
    assert not checks["ledger"].ok


def test_log_is_append_only(pg: Any) -> None:
    pg.execute("INSERT INTO hosts (host_id, instance) VALUES ('h', 'i')")
    pg.execute(
        "INSERT INTO events_raw (host_id, local_id, idempotency_key, source, event_type, payload, received_at, origin)"
        " VALUES ('h', 1, 'k', 'jsonl', 'user', '\\x7b7d', '2026-01-01T00:00:00.000Z', 'a.jsonl')"
    )
    for sql in (
        "UPDATE events_raw SET event_type = 'x'",
        "DELETE FROM events_raw",
        "TRUNCATE events_raw CASCADE",
    ):
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            pg.execute(sql)
    assert pg.execute("SELECT count(*) FROM events_raw").fetchone() == (1,)
    checks = {c.name: c for c in verify_checks(pg)}
    assert checks["append_only"].ok, checks["append_only"].details


def test_duplicate_key_of_one_host_is_refused_but_two_hosts_may_share_a_key(pg: Any) -> None:
    pg.execute("INSERT INTO hosts (host_id, instance) VALUES ('a', 'i'), ('b', 'j')")
    ins = (
        "INSERT INTO events_raw (host_id, local_id, idempotency_key, source, event_type, payload, received_at, origin)"
        " VALUES (%s, 1, 'same-key', 'jsonl', 'user', '\\x7b7d', '2026-01-01T00:00:00.000Z', 'a.jsonl')"
    )
    pg.execute(ins, ("a",))
    pg.execute(ins, ("b",))
    with pytest.raises(psycopg.errors.UniqueViolation):
        pg.execute(ins, ("a",))


def test_time_guard_canonicalises_and_rejects(pg: Any) -> None:
    ins = (
        "INSERT INTO token_usage (host_id, session_id, message_id, model, bucket, tokens, occurred_at)"
        " VALUES ('h', 's', %s, 'm', 'input', 1, %s)"
    )
    pg.execute(ins, ("m1", "2025-06-01T02:00:00+02:00"))
    pg.execute(ins, ("m2", "2025-06-01"))
    got = dict(pg.execute("SELECT message_id, occurred_at FROM token_usage").fetchall())
    assert got == {"m1": "2025-06-01T00:00:00.000Z", "m2": "2025-06-01T00:00:00.000Z"}
    for bad in ("2025-06-01T02:00:00", "yesterday", "2025-02-30"):
        with pytest.raises(psycopg.errors.RaiseException, match="zoned ISO-8601"):
            pg.execute(ins, ("m3", bad))


op = st.one_of(
    st.tuples(
        st.just("insert"),
        st.integers(0, 7),
        st.sampled_from(["s1", "s2"]),
        st.sampled_from(MODELS),
        st.sampled_from(BUCKETS),
        st.integers(0, 10**6),
        st.sampled_from(TIMES),
        st.sampled_from(HOSTS),
        st.sampled_from(PROMPTS),
        st.sampled_from(SPEEDS),
        st.integers(0, 5),
    ),
    st.tuples(st.just("update_prompt"), st.integers(0, 7), st.sampled_from(PROMPTS)),
    st.tuples(st.just("update_speed"), st.integers(0, 7), st.sampled_from(SPEEDS)),
    st.tuples(st.just("update_searches"), st.integers(0, 7), st.integers(0, 5)),
    st.tuples(st.just("update_tokens"), st.integers(0, 7), st.integers(0, 10**6)),
    st.tuples(st.just("update_model"), st.integers(0, 7), st.sampled_from(MODELS)),
    st.tuples(st.just("update_time"), st.integers(0, 7), st.sampled_from(TIMES)),
    st.tuples(st.just("update_session"), st.integers(0, 7), st.sampled_from(["s1", "s2", "s3"])),
    st.tuples(st.just("update_host"), st.integers(0, 7), st.sampled_from(HOSTS)),
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
    st.tuples(st.just("price_threshold"), st.sampled_from(MODELS), st.sampled_from([None, 1_000, 200_000])),
)

_FIRST_PRICE = "SELECT ctid FROM model_pricing WHERE model = %s ORDER BY effective_from, bucket LIMIT 1"


def apply(conn: Any, o: tuple[Any, ...]) -> None:
    """One mutation, in its own savepoint: a refused one (a key collision) changes nothing."""
    kind = o[0]
    try:
        with conn.transaction():
            if kind == "insert":
                _, m, s, model, bucket, tokens, t, h, prompt, speed, searches = o
                conn.execute(
                    "INSERT INTO token_usage (host_id, session_id, message_id, model, bucket, tokens, occurred_at,"
                    " prompt_tokens, speed, web_search_requests)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (message_id, bucket) DO UPDATE SET"
                    " tokens = EXCLUDED.tokens, model = EXCLUDED.model, occurred_at = EXCLUDED.occurred_at,"
                    " prompt_tokens = EXCLUDED.prompt_tokens, speed = EXCLUDED.speed,"
                    " web_search_requests = EXCLUDED.web_search_requests",
                    (h, s, f"msg{m}", model, bucket, tokens, t, prompt, speed, searches),
                )
            elif kind in (
                "update_tokens",
                "update_model",
                "update_time",
                "update_session",
                "update_host",
                "update_prompt",
                "update_speed",
                "update_searches",
            ):
                col = {
                    "update_tokens": "tokens",
                    "update_model": "model",
                    "update_time": "occurred_at",
                    "update_session": "session_id",
                    "update_host": "host_id",
                    "update_prompt": "prompt_tokens",
                    "update_speed": "speed",
                    "update_searches": "web_search_requests",
                }[kind]
                conn.execute(f"UPDATE token_usage SET {col} = %s WHERE message_id = %s", (o[2], f"msg{o[1]}"))
            elif kind == "delete":
                conn.execute("DELETE FROM token_usage WHERE message_id = %s", (f"msg{o[1]}",))
            elif kind == "price_insert":
                conn.execute(
                    "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
                    " VALUES (%s, %s, %s, %s, 'test') ON CONFLICT (model, bucket, effective_from)"
                    " DO UPDATE SET usd_per_mtok = EXCLUDED.usd_per_mtok",
                    (o[1], o[2], o[4], o[3]),
                )
            elif kind == "price_update":
                conn.execute("UPDATE model_pricing SET usd_per_mtok = %s WHERE model = %s", (o[2], o[1]))
            elif kind == "price_move":
                conn.execute(
                    f"UPDATE model_pricing SET effective_from = %s WHERE ctid = ({_FIRST_PRICE})", (o[2], o[1])
                )
            elif kind == "price_delete":
                conn.execute(f"DELETE FROM model_pricing WHERE ctid = ({_FIRST_PRICE})", (o[1],))
            elif kind == "price_threshold":  # a tier appears, moves or goes: usage changes tier
                conn.execute(
                    "UPDATE model_pricing SET long_context_threshold = %s, long_context_usd_per_mtok = 1"
                    " WHERE model = %s",
                    (o[2], o[1]),
                )
    except psycopg.errors.UniqueViolation:
        pass


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(op, min_size=1, max_size=20))
def test_rollup_equals_scan_after_every_step_on_postgresql(pg: Any, ops: list[tuple[Any, ...]]) -> None:
    with pg.transaction(force_rollback=True):  # every example starts from the migrated store
        for o in ops:
            apply(pg, o)
            assert rollup_differences(pg) == [], o


def test_rollup_keys_tier_and_speed_and_sums_searches(pg: Any) -> None:
    # Sonnet 4.5 has the seeded long-context tier (threshold 200,000) from 2025-09-29 (0003 = SQLite 0012)
    ins = (
        "INSERT INTO token_usage (host_id, session_id, message_id, model, bucket, tokens, occurred_at,"
        " prompt_tokens, speed, web_search_requests) VALUES ('h', 's', %s, %s, 'output', 10, %s, %s, %s, %s)"
    )
    son = "claude-sonnet-4-5-20250929"
    pg.execute(ins, ("m1", son, "2025-10-01T00:00:00Z", 200_000, "", 2))
    pg.execute(ins, ("m2", son, "2025-10-01T00:01:00Z", 200_001, "", 3))
    pg.execute(ins, ("m3", son, "2025-10-01T00:02:00Z", 200_001, "", 4))
    pg.execute(ins, ("m4", son, "2025-10-01T00:03:00Z", 5, "fast", 0))
    pg.execute(ins, ("m5", son, "2025-09-01T00:00:00Z", 300_000, "", 0))  # before the tier existed
    got = pg.execute(
        "SELECT slot, tier, speed, tokens, row_count, web_search_requests FROM token_usage_rollup ORDER BY 1, 2, 3"
    ).fetchall()
    assert got == [
        ("2025-09-01T00:00Z", 0, "", 10, 1, 0),
        ("2025-10-01T00:00Z", 0, "", 10, 1, 2),
        ("2025-10-01T00:00Z", 0, "fast", 10, 1, 0),
        ("2025-10-01T00:00Z", 1, "", 20, 2, 7),
    ]
    pg.execute("DELETE FROM token_usage WHERE message_id = 'm3'")
    pg.execute("UPDATE token_usage SET speed = 'fast' WHERE message_id = 'm1'")
    assert rollup_differences(pg) == []
    assert pg.execute("SELECT sum(web_search_requests) FROM token_usage_rollup").fetchone() == (5,)


def test_new_price_moves_existing_rows(pg: Any) -> None:
    pg.execute(
        "INSERT INTO token_usage (host_id, session_id, message_id, model, bucket, tokens, occurred_at)"
        " VALUES ('h', 's', 'm1', 'x-model', 'input', 1000000, '2025-05-01T00:00:00Z'),"
        "        ('h', 's', 'm2', 'x-model', 'input', 1000000, '2025-07-01T00:00:00Z')"
    )
    assert {r[0] for r in pg.execute("SELECT rate_effective_from FROM token_usage_rollup")} == {""}
    pg.execute(
        "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
        " VALUES ('x-model', 'input', 2, '2025-05-01T00:00:00Z', 't')"
    )
    rates = dict(pg.execute("SELECT slot, rate_effective_from FROM token_usage_rollup").fetchall())
    assert rates == {"2025-05-01T00:00Z": "2025-05-01T00:00:00.000Z", "2025-07-01T00:00Z": "2025-05-01T00:00:00.000Z"}
    assert rollup_differences(pg) == []


def test_a_store_at_0002_upgrades_with_its_rollup_regrouped(pg_url: str, tmp_path: Path) -> None:
    old = tmp_path / "pg"
    old.mkdir()
    for f in sorted(mig.PG_MIGRATIONS_DIR.glob("000[12]_*.sql")):
        shutil.copy(f, old / f.name)
    with psycopg.connect(pg_url) as conn:
        assert [p.id for p in mig.migrate(conn, directory=old, pins=ledger.PG_PINS[:2])] == [1, 2]
        conn.execute(
            "INSERT INTO token_usage (host_id, session_id, message_id, model, bucket, tokens, occurred_at)"
            " VALUES ('h', 's', 'm1', 'claude-opus-4-6', 'output', 1000, '2026-06-01T00:00:00Z'),"
            "        ('h', 's', 'm2', 'claude-opus-4-6', 'input', 7, '2025-01-01T00:00:00Z')"
        )
        conn.commit()
        assert [p.id for p in mig.migrate(conn)] == [p.id for p in ledger.PG_PINS[2:]]
        got = conn.execute(
            "SELECT bucket, rate_effective_from, tier, speed, tokens, row_count, web_search_requests"
            " FROM token_usage_rollup ORDER BY 1"
        ).fetchall()
        # the output row now resolves to the 0003 seed's fast-mode row (2026-02-05), the input one stays
        assert got == [
            ("input", "2024-01-01T00:00:00.000Z", 0, "", 7, 1, 0),
            ("output", "2026-02-05T00:00:00.000Z", 0, "", 1000, 1, 0),
        ]
        assert rollup_differences(conn) == []
        assert conn.execute("SELECT title_source FROM sessions").fetchall() == []
