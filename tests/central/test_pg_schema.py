"""What only the central store's schema does, on a real PostgreSQL: lz4 payloads, TRUNCATE refused,
verify's ledger and append-only checks, one log per host, the upgrade from pg 0002. The rules both
stores share (the ledger, the guards, the rollup) are the contract suite's, ``tests/stores/``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ingestd.central import migrate as mig
from ingestd.central.check import rollup_differences, verify_checks
from ingestd.core import ledger


@pytest.fixture
def pg(pg_url: str) -> Any:
    conn = psycopg.connect(pg_url, autocommit=True)
    mig.migrate(conn)
    yield conn
    conn.close()


def test_payloads_are_compressed_with_lz4(pg: Any) -> None:
    compression = pg.execute(
        "SELECT attcompression FROM pg_attribute WHERE attrelid = 'events_raw'::regclass AND attname = 'payload'"
    ).fetchone()
    assert compression == ("l",)  # this server has lz4


def test_pins_match_the_files_shipped() -> None:
    p = ledger.plan(mig.files_on_disk(mig.PG_MIGRATIONS_DIR), [], ledger.PG_PINS)
    assert p.problems == ()


def test_verify_fails_the_ledger_on_a_tampered_recorded_checksum(pg: Any) -> None:
    assert {c.name: c.ok for c in verify_checks(pg)}["ledger"]
    pg.execute("UPDATE schema_version SET checksum = repeat('0', 64) WHERE id = 1")
    assert not {c.name: c.ok for c in verify_checks(pg)}["ledger"]


def test_the_log_refuses_truncate_and_verify_finds_its_guards_in_place(pg: Any) -> None:
    pg.execute("INSERT INTO hosts (host_id, instance) VALUES ('h', 'i')")
    pg.execute(
        "INSERT INTO events_raw (host_id, local_id, idempotency_key, source, event_type, payload, received_at, origin)"
        " VALUES ('h', 1, 'k', 'jsonl', 'user', '\\x7b7d', '2026-01-01T00:00:00.000Z', 'a.jsonl')"
    )
    with pytest.raises(psycopg.errors.RaiseException, match="append-only: rows are never truncated"):
        pg.execute("TRUNCATE events_raw CASCADE")
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
        # up to pg 0008, the last schema of five usage rows per message
        before = tmp_path / "pg-0008"
        before.mkdir()
        for f in sorted(mig.PG_MIGRATIONS_DIR.glob("000[1-8]_*.sql")):
            shutil.copy(f, before / f.name)
        assert [p.id for p in mig.migrate(conn, directory=before, pins=ledger.PG_PINS[:8])] == [3, 4, 5, 6, 7, 8]
        got = conn.execute(
            "SELECT bucket, rate_effective_from, tier, speed, tokens, row_count, web_search_requests"
            " FROM token_usage_rollup ORDER BY 1"
        ).fetchall()
        # the output row now resolves to the 0003 seed's fast-mode row (2026-02-05), the input one stays
        assert got == [
            ("input", "2024-01-01T00:00:00.000Z", 0, "", 7, 1, 0),
            ("output", "2026-02-05T00:00:00.000Z", 0, "", 1000, 1, 0),
        ]
        assert conn.execute("SELECT title_source FROM sessions").fetchall() == []
        # pg 0009: one row per message; the projector refolds the log (its rules revision changed)
        assert [p.id for p in mig.migrate(conn)] == [p.id for p in ledger.PG_PINS[8:]]
        assert conn.execute("SELECT count(*) FROM token_usage_rollup").fetchall() == [(0,)]
        assert rollup_differences(conn) == []
