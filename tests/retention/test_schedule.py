"""Scheduling: the pure ``due`` and ``run_scheduled`` with its meta bookkeeping and off-switch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ingestd.retention.schedule import due, run_scheduled
from ingestd.settings import resolve
from ingestd.store.connection import connect

NOW = datetime(2026, 4, 3, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("last", "now", "expected"),
    [
        (None, NOW, True),
        ("2026-04-02T00:00:00.000Z", NOW, True),
        ("2026-04-02T00:00:01.000Z", NOW, False),
        ("2026-03-01T00:00:00.000Z", NOW, True),  # missed runs: due at the next start
        ("2027-01-01T00:00:00.000Z", NOW, True),  # a stamp in the future cannot stop the schedule
        ("garbage", NOW, True),
    ],
)
def test_due(last: str | None, now: datetime, expected: bool) -> None:
    """A job is due when it never ran, when its interval has passed (missed runs: once, at the next start), or
    when its stamp is unreadable or in the future."""
    assert due(last, now, 86400) is expected


def _meta(db: Path) -> dict[str, str]:
    return dict(connect(db).execute("SELECT key, value FROM meta").fetchall())


def test_run_scheduled_runs_both_once_per_interval(db_path: Path, tmp_path: Path) -> None:
    s = resolve({"backup_dir": str(tmp_path / "bk")}, {}, {})
    first = run_scheduled(db_path, s, NOW)
    assert first.enabled and not first.errors
    assert [p.table for p in first.pruned] == ["events"] and first.pruned[0].rows == 4
    assert first.backup is not None and Path(first.backup.path).exists()
    assert _meta(db_path) == {"last_prune_at": "2026-04-03T00:00:00.000Z", "last_backup_at": "2026-04-03T00:00:00.000Z"}
    again = run_scheduled(db_path, s, NOW + timedelta(hours=1))
    assert again.pruned == [] and again.backup is None
    later = run_scheduled(db_path, s, NOW + timedelta(days=3))  # the daemon was down: runs at next start
    assert later.backup is not None and [p.table for p in later.pruned] == ["events"]
    assert _meta(db_path)["last_backup_at"] == "2026-04-06T00:00:00.000Z"
    assert len(list((tmp_path / "bk").iterdir())) == 2


def test_off_switch(db_path: Path, tmp_path: Path) -> None:
    """With the schedule off nothing runs, no stamp is written and no backup directory is made."""
    s = resolve({"backup_dir": str(tmp_path / "bk")}, {"INGESTD_SCHEDULE_ENABLED": "false"}, {})
    r = run_scheduled(db_path, s, NOW)
    assert not r.enabled and r.backup is None
    assert _meta(db_path) == {}
    assert not (tmp_path / "bk").exists()


def test_each_job_follows_its_own_interval(db_path: Path, tmp_path: Path) -> None:
    s = resolve(
        {"backup_dir": str(tmp_path / "bk"), "schedule_prune_interval_s": 3600, "schedule_backup_interval_s": 86400},
        {},
        {},
    )
    run_scheduled(db_path, s, NOW)
    later = run_scheduled(db_path, s, NOW + timedelta(hours=2))
    assert [p.table for p in later.pruned] == ["events"] and later.backup is None
    assert _meta(db_path) == {"last_prune_at": "2026-04-03T02:00:00.000Z", "last_backup_at": "2026-04-03T00:00:00.000Z"}
