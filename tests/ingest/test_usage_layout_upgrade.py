"""A database made by ingestd before one ``token_usage`` row per message (migration 0024) upgrades with
``ingestd migrate`` to projections equal to a fresh ingest of the same corpus: totals, sessions,
agents, edges, tool calls and every other projection table, row for row.

``fixtures/upgrade/main-0021.db.gz`` was made by main at f276b46 (schema 0021, five usage rows per
message) from the real corpus ``../shared/corpus/claude-projects``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core import ledger
from ingestd.projection.dump import TABLES, columns
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, resolve_zone
from ingestd.store import rollup
from ingestd.store.connection import connect
from ingestd.store.migrate import applied, migrate

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "upgrade" / "main-0021.db.gz"
CORPUS = ROOT.parent / "shared" / "corpus" / "claude-projects"
# The database's own identity, stamped on edges: a fresh database has another.
IDENTITY = {"orchestration_edges": ("instance", "host_id")}
NEWEST = ledger.PINS[-1].id


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def _projections(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every projection table, every column but surrogate ids and the database identity, in key order."""
    conn = connect(db, readonly=True)
    try:
        out = {}
        for table, key in TABLES:
            keep = ", ".join(f'"{c}"' for c in columns(conn, table) if c not in IDENTITY.get(table, ()))
            order = ", ".join(f'"{c}"' for c in key)  # as replay orders them (ingestd.projection.dump)
            out[table] = conn.execute(f"SELECT {keep} FROM {table} ORDER BY {order}").fetchall()
        return out
    finally:
        conn.close()


def _cost(db: Path) -> dict[str, Any]:
    conn = connect(db, readonly=True)
    try:
        utc = resolve_zone("UTC", {})
        return {by: cost_report(conn, by=by, window=Window(None, None), zone=utc) for by in (None, "session", "agent")}
    finally:
        conn.close()


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(the fixture migrated by ``ingestd migrate``, a fresh ingest of the corpus, migrate's output)."""
    if not CORPUS.is_dir():
        pytest.skip(f"real corpus not found at {CORPUS}")
    tmp = tmp_path_factory.mktemp("upgrade")
    old = tmp / "old.db"
    old.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    code, out = _run("migrate", "--db", str(old))
    assert code == 0, out
    fresh = tmp / "fresh.db"
    code, text = _run("ingest", "--db", str(fresh), "--projects", str(CORPUS))
    assert code == 0, text
    return old, fresh, out


def test_the_fixture_is_from_before_the_layout() -> None:
    conn = connect(":memory:")
    conn.deserialize("main", gzip.decompress(FIXTURE.read_bytes()))
    assert max(a.id for a in applied(conn)) == 21
    assert "bucket" in [str(r[1]) for r in conn.execute("PRAGMA table_info(token_usage)")]


def test_migrate_applies_the_layout_and_reprojects(upgraded: tuple[Path, Path, str]) -> None:
    old, _, out = upgraded
    assert "applied 0024_usage_columns" in out
    assert "re-projected" in out
    conn = connect(old, readonly=True)
    assert max(a.id for a in applied(conn)) == NEWEST
    assert "bucket" not in [str(r[1]) for r in conn.execute("PRAGMA table_info(token_usage)")]
    conn.close()


def test_every_projection_equals_a_fresh_ingest(upgraded: tuple[Path, Path, str]) -> None:
    old, fresh, _ = upgraded
    got, want = _projections(old), _projections(fresh)
    for table in ("sessions", "agents", "orchestration_edges", "tool_calls", "token_usage", "token_usage_rollup"):
        assert want[table], f"{table}: the corpus gives rows"
    for table in want:
        assert got[table] == want[table], table
    assert _cost(old) == _cost(fresh)


def test_the_upgraded_database_verifies_and_replays(upgraded: tuple[Path, Path, str]) -> None:
    old, _, _ = upgraded
    code, out = _run("verify", "--db", str(old))
    assert code == 0, out
    code, out = _run("replay", "--db", str(old), "--json")
    assert code == 0, out
    assert json.loads(out)["ok"] is True


def test_the_migration_alone_carries_every_row_over() -> None:
    """Before any re-projection, the migrated rows are the old ones, one per message, summed by bucket."""
    conn = connect(":memory:")
    conn.deserialize("main", gzip.decompress(FIXTURE.read_bytes()))
    buckets = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
    before = {
        (str(m), str(b)): int(n) for m, b, n in conn.execute("SELECT message_id, bucket, tokens FROM token_usage")
    }
    assert [p.id for p in migrate(conn)] == list(range(22, NEWEST + 1))
    after = conn.execute(f"SELECT message_id, {', '.join(buckets)} FROM token_usage").fetchall()
    assert len(after) == len({m for m, _ in before})
    assert {(str(r[0]), b): int(r[1 + i]) for r in after for i, b in enumerate(buckets)} == before
    assert rollup.differences(conn) == []
