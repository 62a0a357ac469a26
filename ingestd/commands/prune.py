"""``ingestd prune [--dry-run] [--json]``: SPEC §8 retention of the prunable projections and backups."""

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import db_option, emit_json, json_option, open_db, resolve_db
from ingestd.retention import backup as bk
from ingestd.retention import prune as pr
from ingestd.retention.schedule import backup_dir_from, policy_from
from ingestd.settings import load


def register(cli: click.Group) -> None:
    @cli.command("prune")
    @db_option
    @click.option("--dry-run", is_flag=True, help="List exactly the rows and backups that would go; change nothing.")
    @click.option(
        "--events-older-than",
        "events_days",
        type=click.IntRange(min=0),
        default=None,
        metavar="DAYS",
        help="Prune events older than DAYS [setting retention_events_days, default 90].",
    )
    @click.option(
        "--delete-token-usage-older-than",
        "usage_days",
        type=click.IntRange(min=0),
        default=None,
        metavar="DAYS",
        help="Also delete token_usage older than DAYS (cost history is lost).",
    )
    @click.option(
        "--i-understand-cost-history-is-lost",
        "ack",
        is_flag=True,
        default=None,
        help="Required with --delete-token-usage-older-than.",
    )
    @click.option(
        "--only",
        "only",
        multiple=True,
        metavar="TABLE",
        help="Prune only this table (repeatable). Protected tables are refused.",
    )
    @click.option(
        "--batch-rows",
        type=click.IntRange(min=1),
        default=None,
        help="Rows per write transaction [setting prune_batch_rows].",
    )
    @click.option(
        "--backup-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Backup directory for backup retention [default: backups/ next to the database].",
    )
    @json_option
    def prune_cmd(
        db_path: Path | None,
        dry_run: bool,
        events_days: int | None,
        usage_days: int | None,
        ack: bool | None,
        only: tuple[str, ...],
        batch_rows: int | None,
        backup_dir: Path | None,
        as_json: bool,
    ) -> None:
        """Delete events older than 90 days (token_usage only when asked explicitly) and old backups.

        Runs in short batches ordered by (occurred_at, id) and writes a receipt per table.
        """
        settings = load(
            {
                "retention_events_days": events_days,
                "retention_token_usage_days": usage_days,
                "retention_token_usage_acknowledged": True if ack else None,
                "prune_batch_rows": batch_rows,
                "backup_dir": str(backup_dir) if backup_dir else None,
                "ship_to": None,
            },
            dict(os.environ),
        )
        policy = dataclasses.replace(policy_from(settings), only=only)
        pr.targets(policy)  # refuse protected / unacknowledged before opening anything
        path = resolve_db(db_path)
        now = datetime.now(UTC)
        conn = open_db(db_path, create=False)
        shipped = None
        if settings.get_opt_str("ship_to"):
            from ingestd.store.identity import shipped_through

            shipped = shipped_through(conn)
        results = pr.prune(
            conn,
            policy,
            now=now,
            dry_run=dry_run,
            batch_rows=settings.get_int("prune_batch_rows"),
            shipped_through=shipped,
        )
        retention = None
        if not only:
            retention = bk.apply_retention(
                backup_dir_from(settings, path),
                now=now,
                retention_days=settings.get_int("backup_retention_days"),
                keep_newest=settings.get_int("backup_keep_newest"),
                dry_run=dry_run,
            )
        if as_json:
            emit_json(
                {
                    "dry_run": dry_run,
                    "targets": [r.to_json() for r in results],
                    "backups": retention.to_json() if retention else None,
                }
            )
            return
        verb = "would delete" if dry_run else "deleted"
        for r in results:
            click.echo(f"{r.table}: {verb} {r.rows} rows with occurred_at < {r.cutoff}", nl=False)
            click.echo("" if dry_run else f" in {r.batches} batches (receipt #{r.receipt_id})")
            if dry_run:
                for at, rid in r.keys:
                    click.echo(f"  {r.table} id={rid} occurred_at={at}")
        if retention is not None:
            click.echo(f"backups in {retention.directory}: {verb} {len(retention.deleted)}, kept {len(retention.kept)}")
            for n in retention.deleted:
                click.echo(f"  {n}")
