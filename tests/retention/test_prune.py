"""Prune: dry-run equals the real run, protected tables untouched, token_usage kept, receipts written."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.errors import ConfigError
from ingestd.retention import prune as pr
from ingestd.store import pruned, rollup
from ingestd.store.connection import connect

NOW = datetime(2026, 4, 3, 0, 0, tzinfo=UTC)  # 90 days back: 2026-01-03T00:00Z


def _dump(db: Path, tables: list[str]) -> dict[str, list[tuple[object, ...]]]:
    conn = connect(db)
    return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables}


# SPEC §8, spelled out rather than read from pr.PROTECTED, so dropping a name there fails a test.
PROTECTED = [
    "agents",
    "events_raw",
    "model_pricing",
    "orchestration_edges",
    "schema_version",
    "sessions",
    "token_usage_rollup",
]
ALL = [*PROTECTED, "token_usage", "events", "tool_calls", "prune_receipts"]


def test_protected_set_is_the_specified_one() -> None:
    assert sorted(pr.PROTECTED) == PROTECTED


def test_dry_run_changes_nothing_and_lists_what_the_real_run_deletes(db_path: Path) -> None:
    conn = connect(db_path)
    before = _dump(db_path, ALL)
    dry = pr.prune(conn, pr.Policy(), now=NOW, dry_run=True, batch_rows=3)
    assert _dump(db_path, ALL) == before
    real = pr.prune(conn, pr.Policy(), now=NOW, batch_rows=3)
    assert [r.table for r in dry] == [r.table for r in real] == ["events"]
    assert dry[0].keys == real[0].keys
    assert dry[0].rows == real[0].rows == 4  # 2 sessions x 2 days before the cutoff
    assert all(at < "2026-01-03T00:00:00.000Z" for at, _ in real[0].keys)
    assert real[0].keys == sorted(real[0].keys)
    left = conn.execute("SELECT min(occurred_at), count(*) FROM events").fetchall()[0]
    assert left == ("2026-01-03T10:00:00.000Z", 6)


def test_protected_tables_untouched_and_token_usage_kept_by_default(db_path: Path) -> None:
    before = _dump(db_path, [*PROTECTED, "token_usage"])
    pr.prune(connect(db_path), pr.Policy(events_days=0), now=NOW, batch_rows=2)
    assert _dump(db_path, [*PROTECTED, "token_usage"]) == before
    assert connect(db_path).execute("SELECT count(*) FROM events").fetchall() == [(0,)]


@pytest.mark.parametrize("table", PROTECTED)
def test_protected_tables_refused_by_name(db_path: Path, table: str) -> None:
    with pytest.raises(ConfigError, match="protected"):
        pr.prune(connect(db_path), pr.Policy(only=(table,)), now=NOW)
    res = CliRunner().invoke(cli, ["prune", "--db", str(db_path), "--only", table])
    assert res.exit_code == 2
    assert "protected" in res.stderr


def test_token_usage_needs_explicit_acknowledgement(db_path: Path) -> None:
    res = CliRunner().invoke(cli, ["prune", "--db", str(db_path), "--delete-token-usage-older-than", "90"])
    assert res.exit_code == 2 and "cost history" in res.stderr
    assert connect(db_path).execute("SELECT count(*) FROM token_usage").fetchall() == [(10,)]
    with pytest.raises(ConfigError):
        pr.targets(pr.Policy(token_usage_days=1))


def test_token_usage_pruned_when_acknowledged_keeps_rollup_exact(db_path: Path) -> None:
    conn = connect(db_path)
    res = pr.prune(conn, pr.Policy(token_usage_days=90, acknowledge_cost_loss=True), now=NOW, batch_rows=4)
    usage = next(r for r in res if r.table == "token_usage")
    assert usage.rows == 4  # 2 sessions x 2 days, one row per message
    assert rollup.differences(conn) == []
    assert conn.execute("SELECT count(*) FROM token_usage").fetchall() == [(6,)]


def test_receipt_written_per_target_with_watermark(db_path: Path) -> None:
    conn = connect(db_path)
    [res] = pr.prune(conn, pr.Policy(), now=NOW, batch_rows=1)
    assert res.batches == 5  # 4 rows, one per batch, then an empty batch
    rows = conn.execute("SELECT ran_at, target, cutoff, rows, dry_run, max_raw_event_id FROM prune_receipts").fetchall()
    mark = conn.execute("SELECT max(id) FROM events_raw").fetchall()[0][0]
    assert rows == [("2026-04-03T00:00:00.000Z", "events", "2026-01-03T00:00:00.000Z", 4, 0, mark)]
    assert pruned.receipts(conn) == [pruned.Receipt("events", "2026-01-03T00:00:00.000Z", 4, mark)]


def test_dry_run_writes_no_receipt(db_path: Path) -> None:
    conn = connect(db_path)
    pr.prune(conn, pr.Policy(), now=NOW, dry_run=True)
    assert conn.execute("SELECT count(*) FROM prune_receipts").fetchall() == [(0,)]


def test_cli_dry_run_prints_the_rows(db_path: Path) -> None:
    res = CliRunner().invoke(cli, ["prune", "--db", str(db_path), "--dry-run", "--json", "--events-older-than", "90"])
    assert res.exit_code == 0, res.output
    doc = orjson.loads(res.stdout)
    assert doc["dry_run"] is True
    [t] = doc["targets"]
    assert t["target"] == "events" and t["rows"] == len(t["keys"])
    human = CliRunner().invoke(cli, ["prune", "--db", str(db_path), "--dry-run", "--events-older-than", "0"])
    assert human.exit_code == 0
    assert human.stdout.count("events id=") == 10


def test_apply_receipts_removes_only_covered_rows(db_path: Path) -> None:
    conn = connect(db_path)
    before = conn.execute("SELECT raw_event_id FROM events ORDER BY 1").fetchall()
    recs = [pruned.Receipt("events", "2026-01-03T00:00:00.000Z", 4, before[2][0])]
    conn.execute("BEGIN")
    removed = pruned.apply_receipts(conn, recs)
    conn.execute("ROLLBACK")
    # only rows at or below the watermark are covered; later log rows were never pruned
    assert 0 < removed <= 4


def test_unshipped_token_usage_counts_only_while_a_log_row_is_unshipped(db_path: Path) -> None:
    conn = connect(db_path)
    mark = conn.execute("SELECT max(id) FROM events_raw").fetchall()[0][0]
    usage = pr.PruneTarget("token_usage", 90)
    assert pr.unshipped(conn, usage, NOW, mark) == 0  # the whole log shipped: nothing held back
    assert pr.unshipped(conn, usage, NOW, mark - 1) == 4  # one row behind: every candidate counts
    with pytest.raises(ConfigError, match="refusing to prune token_usage"):
        pr.prune(conn, pr.Policy(token_usage_days=90, acknowledge_cost_loss=True), now=NOW, shipped_through=mark - 1)
    assert conn.execute("SELECT count(*) FROM token_usage").fetchall() == [(10,)]
