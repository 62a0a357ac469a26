"""What prune removed stays removed on the live path too: a re-read of pruned history (a resumed
session's copy of it, a synced copy of the file) does not bring the rows back, so live == replay."""

from __future__ import annotations

import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.daemon.ingestrun import IngestRunner
from ingestd.projection.verify import check_pruned
from ingestd.retention import prune as pr
from ingestd.store import pruned, rollup
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.pruned import covering

PROJ = Path(__file__).resolve().parents[2] / "fixtures/projects/-home-u-proj"
FIXTURE = PROJ / "44444444-4444-4444-8444-444444444444.jsonl"


def _run(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def _pruned_then_copied(tmp_path: Path, copy_name: str) -> Path:
    """Ingest the fixture, prune every token_usage row (its times are 2026-02), copy the file, ingest."""
    proj = tmp_path / "p" / "-proj"
    proj.mkdir(parents=True)
    shutil.copy(FIXTURE, proj / FIXTURE.name)
    db = tmp_path / "x.db"
    _run("ingest", "--projects", str(tmp_path / "p"), "--db", str(db))
    assert connect(db).execute("SELECT count(*) FROM token_usage").fetchall()[0][0] > 0
    _run("prune", "--db", str(db), "--delete-token-usage-older-than", "30", "--i-understand-cost-history-is-lost")
    assert connect(db).execute("SELECT count(*) FROM token_usage").fetchall() == [(0,)]
    shutil.copy(FIXTURE, proj / copy_name)
    _run("ingest", "--projects", str(tmp_path / "p"), "--db", str(db))
    return db


@pytest.mark.parametrize("copy_name", ["resumed-copy.jsonl", "55555555-5555-4555-8555-555555555555.jsonl"])
def test_reread_history_older_than_a_prune_cutoff_is_not_reinserted(tmp_path: Path, copy_name: str) -> None:
    db = _pruned_then_copied(tmp_path, copy_name)
    conn = connect(db)
    assert conn.execute("SELECT count(*) FROM events_raw WHERE origin LIKE ?", (f"%{copy_name}",)).fetchall()[0][0]
    assert conn.execute("SELECT count(*) FROM token_usage").fetchall() == [(0,)]
    assert rollup.differences(conn) == []
    assert check_pruned(conn).ok
    _run("replay", "--db", str(db))  # exit 0: live equals the rebuild with the receipts applied


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    """An empty migrated database (this folder's ``db_path`` is seeded)."""
    path = tmp_path / "fresh.db"
    migrate(connect(path))
    return path


def test_rows_newer_than_the_cutoff_still_go_in(tmp_path: Path, fresh: Path) -> None:
    """The guard drops only what a receipt covers: a receipt older than the rows changes nothing."""
    proj = tmp_path / "p" / "-proj"
    proj.mkdir(parents=True)
    shutil.copy(FIXTURE, proj / FIXTURE.name)
    conn = connect(fresh)
    conn.execute(
        "INSERT INTO prune_receipts (ran_at, target, cutoff, rows, dry_run, max_raw_event_id)"
        " VALUES ('2026-03-01T00:00:00.000Z', 'token_usage', '2026-01-01T00:00:00.000Z', 0, 0, NULL)"
    )
    _run("ingest", "--projects", str(tmp_path / "p"), "--db", str(fresh))
    assert conn.execute("SELECT count(*) FROM token_usage").fetchall()[0][0] > 0


def test_verify_names_a_row_older_than_a_receipt_cutoff(fresh: Path, tmp_path: Path) -> None:
    proj = tmp_path / "p" / "-proj"
    proj.mkdir(parents=True)
    shutil.copy(FIXTURE, proj / FIXTURE.name)
    _run("ingest", "--projects", str(tmp_path / "p"), "--db", str(fresh))
    conn = connect(fresh)
    assert check_pruned(conn).ok
    # a receipt written as if prune had run, without the delete: what the bug left behind
    conn.execute(
        "INSERT INTO prune_receipts (ran_at, target, cutoff, rows, dry_run, max_raw_event_id)"
        " VALUES ('2026-12-01T00:00:00.000Z', 'token_usage', '2026-06-01T00:00:00.000Z', 0, 0, NULL)"
    )
    found = check_pruned(conn)
    assert not found.ok
    assert "token_usage" in found.details[0] and "2026-06-01T00:00:00.000Z" in found.details[0]
    res = CliRunner().invoke(cli, ["verify", "--db", str(fresh)])
    assert res.exit_code != 0


def test_covering_keeps_the_latest_usage_cutoff_and_the_undominated_event_receipts() -> None:
    u1 = pruned.Receipt("token_usage", "2026-01-01T00:00:00.000Z", 1, 5)
    u2 = pruned.Receipt("token_usage", "2026-02-01T00:00:00.000Z", 1, 3)
    e1 = pruned.Receipt("events", "2026-01-01T00:00:00.000Z", 1, 5)
    e2 = pruned.Receipt("events", "2026-02-01T00:00:00.000Z", 1, 9)  # dominates e1
    e3 = pruned.Receipt("events", "2026-03-01T00:00:00.000Z", 1, 7)  # later cutoff, lower watermark: both kept
    backups = pruned.Receipt("backups", "2026-03-01T00:00:00.000Z", 1, None)
    assert covering([u1, e1, u2, e2, backups, e3]) == [u2, e2, e3]
    assert covering([e1, e1]) == [e1]
    assert covering([]) == []


async def test_the_daemons_tailer_does_not_bring_pruned_usage_back(tmp_path: Path, fresh: Path) -> None:
    """The daemon's transcript path (``IngestRunner``, as ``serve`` runs it) after a prune."""
    db_path = fresh
    root = tmp_path / "p"
    (root / "-proj").mkdir(parents=True)
    shutil.copy(FIXTURE, root / "-proj" / FIXTURE.name)
    runner = IngestRunner(lambda: connect(db_path), [root], clock=time.time_ns)
    try:
        await runner(None)
        conn = connect(db_path)
        assert conn.execute("SELECT count(*) FROM token_usage").fetchall()[0][0] > 0
        policy = pr.Policy(events_days=None, token_usage_days=30, acknowledge_cost_loss=True)
        pr.prune(conn, policy, now=datetime.now(UTC))
        copy = root / "-proj" / "resumed-copy.jsonl"
        shutil.copy(FIXTURE, copy)
        summary = await runner([copy])
        assert summary is not None and summary.rows_inserted > 0
        assert conn.execute("SELECT count(*) FROM token_usage").fetchall() == [(0,)]
    finally:
        runner.close()
    _run("replay", "--db", str(db_path))


def test_a_write_between_prune_batches_leaves_the_other_sessions_rows_to_prune(tmp_path: Path) -> None:
    """Prune deletes in short batches and writes its receipt with the first; a writer transaction
    between two batches removes only its own sessions' covered rows, not all that prune has yet to
    delete (under the write lock, uncounted by prune and its receipt)."""
    proj = tmp_path / "p" / "-proj"
    proj.mkdir(parents=True)
    shutil.copy(FIXTURE, proj / FIXTURE.name)
    db = tmp_path / "x.db"
    _run("ingest", "--projects", str(tmp_path / "p"), "--db", str(db))
    conn = connect(db)
    total = conn.execute("SELECT count(*) FROM token_usage").fetchall()[0][0]
    assert total >= 2
    # another session of its own messages: a copy of the fixture under new session, message and line ids
    other = tmp_path / "66666666-6666-4666-8666-666666666666.jsonl"
    text = FIXTURE.read_text().replace(FIXTURE.stem, other.stem).replace('"msg_', '"msgB_')
    other.write_text(text.replace('Uuid":"r', 'Uuid":"b').replace('"uuid":"r', '"uuid":"b'))
    left: list[int] = []

    def on_batch(n: int) -> None:
        if not left:  # one ingest transaction (another session's file) after prune's first batch
            shutil.copy(other, proj / other.name)
            _run("ingest", "--projects", str(tmp_path / "p"), "--db", str(db))
            sid = FIXTURE.stem
            left.append(conn.execute("SELECT count(*) FROM token_usage WHERE session_id = ?", (sid,)).fetchall()[0][0])

    policy = pr.Policy(events_days=None, token_usage_days=30, acknowledge_cost_loss=True)
    (res,) = pr.prune(conn, policy, now=datetime.now(UTC), batch_rows=1, on_batch=on_batch)
    assert left == [total - 1]
    assert res.rows == total and len(res.keys) == total and res.batches > 2
    assert conn.execute("SELECT rows FROM prune_receipts").fetchall() == [(total,)]
    assert conn.execute("SELECT count(*) FROM token_usage").fetchall() == [(0,)]
    assert check_pruned(conn).ok
    _run("replay", "--db", str(db))
