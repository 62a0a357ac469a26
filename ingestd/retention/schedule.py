"""Scheduled prune and backup, for the daemon (SPEC §8).

The daemon calls ``run_scheduled(db_path, settings, now)`` once at start and then
periodically (every ``CHECK_EVERY_S``), off the event loop (it blocks: prune
batches and a backup). Whether a job runs is decided by the pure ``due`` from the
time of its last run, kept in ``meta`` (``last_prune_at``, ``last_backup_at``), so
a run missed while the daemon was down happens at the next start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from ingestd.core.timefmt import format_utc, parse
from ingestd.errors import IngestdError
from ingestd.logs import get_logger
from ingestd.retention import backup as bk
from ingestd.retention import prune as pr
from ingestd.settings import Settings
from ingestd.store.connection import Db, connect, scalar, set_meta
from ingestd.store.identity import shipped_through

CHECK_EVERY_S = 3600
log = get_logger("ingestd.retention")


def due(last_run_at: str | None, now: datetime, interval_s: int) -> bool:
    """Whether a job last run at ``last_run_at`` (canonical UTC, None: never) is due at ``now``. Pure.

    A job never run, or whose last-run stamp is unreadable, is due. A stamp in the future (clock
    moved back) is treated as due too, so a wrong clock cannot stop the schedule for good.
    """
    if last_run_at is None:
        return True
    last = parse(last_run_at)
    if last is None or last > now:
        return True
    return now - last >= timedelta(seconds=interval_s)


def _job_due(conn: Db, job: str, settings: Settings, now: datetime) -> bool:
    """``due`` for ``job`` from its ``meta`` stamp ``last_<job>_at`` and setting ``schedule_<job>_interval_s``."""
    last = scalar(conn, "SELECT value FROM meta WHERE key = ?", (f"last_{job}_at",))
    return due(last, now, settings.get_int(f"schedule_{job}_interval_s"))


def policy_from(settings: Settings) -> pr.Policy:
    """The prune policy the settings describe."""
    return pr.Policy(
        events_days=settings.get_opt_int("retention_events_days"),
        token_usage_days=settings.get_opt_int("retention_token_usage_days"),
        acknowledge_cost_loss=settings.get_bool("retention_token_usage_acknowledged"),
    )


@dataclass(slots=True)
class ScheduledRun:
    """What one ``run_scheduled`` call did.

    Attributes:
        enabled: bool, the ``schedule_enabled`` switch.
        pruned: list[PruneResult], empty when prune was not due.
        backup: BackupResult | None, None when backup was not due.
        backup_retention: RetentionResult | None, from prune (backup retention runs with prune too).
        errors: list[str], one line per job that failed (the other job still ran).
    """

    enabled: bool
    pruned: list[pr.PruneResult] = field(default_factory=list)
    backup: bk.BackupResult | None = None
    backup_retention: bk.RetentionResult | None = None
    errors: list[str] = field(default_factory=list)


def prune_and_retain(
    conn: Db,
    db_path: Path,
    settings: Settings,
    now: datetime,
    *,
    policy: pr.Policy | None = None,
    dry_run: bool = False,
    keep_keys: bool = True,
    backups: bool = True,
) -> tuple[list[pr.PruneResult], bk.RetentionResult | None]:
    """The retention pass ``ingestd prune`` and the schedule share: prune the projections, then the backups.

    Args:
        conn: the live database.
        db_path: its file (the default backup directory is beside it).
        settings: resolved settings (batch size, backup retention, ``ship_to``).
        now: aware datetime, the clock reading.
        policy: the prune policy (default ``policy_from(settings)``).
        dry_run: list what would go, change nothing.
        keep_keys: keep each pruned row's key in the result (``prune --dry-run`` lists them).
        backups: apply backup retention too (``prune --only`` does not).

    Returns:
        The prune results per table, and the backup retention result (None when ``backups`` is false).

    Side effects: deletes rows in short transactions (unshipped log rows kept in team mode) and old backups.
    """
    pruned = pr.prune(
        conn,
        policy if policy is not None else policy_from(settings),
        now=now,
        dry_run=dry_run,
        batch_rows=settings.get_int("prune_batch_rows"),
        keep_keys=keep_keys,
        shipped_through=shipped_through(conn) if settings.get_opt_str("ship_to") else None,
    )
    if not backups:
        return pruned, None
    retention = bk.apply_retention(
        bk.backup_dir_from(settings, db_path),
        now=now,
        retention_days=settings.get_int("backup_retention_days"),
        keep_newest=settings.get_int("backup_keep_newest"),
        dry_run=dry_run,
        stem=bk.backup_stem(db_path),
    )
    return pruned, retention


def _scheduled_prune(conn: Db, db_path: Path, settings: Settings, now: datetime, run: ScheduledRun) -> None:
    """The prune job: ``prune_and_retain``, its stamp, its log lines; a failure goes to ``run.errors``."""
    try:
        pruned, retention = prune_and_retain(conn, db_path, settings, now, keep_keys=False)
        assert retention is not None
        set_meta(conn, "last_prune_at", format_utc(now))
        run.pruned.extend(pruned)
        for p in pruned:
            log.info("prune finished", target=p.table, cutoff=p.cutoff, rows=p.rows, batches=p.batches)
        log.info("backup retention finished", deleted=len(retention.deleted), kept=len(retention.kept))
    except IngestdError as e:
        run.errors.append(f"prune: {e.message}")
        log.error("scheduled prune failed", error=e.message)
        return
    run.backup_retention = retention


def _scheduled_backup(db_path: Path, settings: Settings, now: datetime, run: ScheduledRun) -> None:
    """The backup job; a failure goes to ``run.errors``."""
    try:
        result = bk.backup(
            db_path,
            now=now,
            directory=bk.backup_dir_from(settings, db_path),
            retention_days=settings.get_int("backup_retention_days"),
            keep_newest=settings.get_int("backup_keep_newest"),
        )
    except IngestdError as e:
        run.errors.append(f"backup: {e.message}")
        log.error("scheduled backup failed", error=e.message)
        return
    run.backup = result
    log.info("backup finished", path=result.path, bytes=result.bytes, elapsed_ms=int(result.elapsed_s * 1000))


def run_scheduled(db_path: Path, settings: Settings, now: datetime) -> ScheduledRun:
    """Run prune and backup if they are due; record when each ran in ``meta``. Blocking.

    Args:
        db_path: the live database.
        settings: resolved settings (``ingestd.settings.load``).
        now: aware datetime, the clock reading.

    Returns:
        A ``ScheduledRun``. Failures are logged and returned, never raised: the daemon keeps serving.
    """
    if not settings.get_bool("schedule_enabled"):
        return ScheduledRun(enabled=False)
    run = ScheduledRun(True)
    conn = connect(db_path)
    try:
        if _job_due(conn, "prune", settings, now):
            _scheduled_prune(conn, db_path, settings, now, run)
        if _job_due(conn, "backup", settings, now):
            _scheduled_backup(db_path, settings, now, run)
    finally:
        conn.close()
    return run
