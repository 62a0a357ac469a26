"""``ingestd prune [--dry-run] [--json]``: SPEC §8 retention of the prunable projections and backups."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import (
    IntRange,
    db_option,
    emit_json,
    json_option,
    load_settings,
    open_db,
    require_safe_files,
    resolve_db,
    setting_option,
)
from ingestd.report.short import hang
from ingestd.retention import backup as bk
from ingestd.retention import prune as pr
from ingestd.retention.schedule import policy_from, prune_and_retain


@click.command("prune")
@db_option
@click.option("--dry-run", is_flag=True, help="List exactly the rows and backups that would go; change nothing.")
@setting_option("retention_events_days", "--events-older-than", metavar="DAYS")
@setting_option(
    "retention_token_usage_days",
    "--delete-token-usage-older-than",
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
@setting_option("prune_batch_rows", "--batch-rows", type=IntRange(min=1))
@setting_option("backup_dir", "--backup-dir", type=click.Path(file_okay=False, path_type=Path))
@json_option
def prune_cmd(
    db_path: Path | None, dry_run: bool, ack: bool | None, only: tuple[str, ...], as_json: bool, **given: object
) -> None:
    """Delete events older than 90 days (token_usage only when asked explicitly) and old backups.

    Runs in short batches ordered by (occurred_at, id) and writes a receipt per table.
    """
    if given.get("backup_dir") is not None:
        given["backup_dir"] = str(given["backup_dir"])
    settings = load_settings({**given, "retention_token_usage_acknowledged": True if ack else None})
    policy = dataclasses.replace(policy_from(settings), only=only)
    pr.targets(policy)  # refuse protected / unacknowledged before opening anything
    path = resolve_db(db_path)
    # --dry-run changes nothing: not even the schema (a migration is for good: an older ingestd
    # sharing the database could no longer open it); pending migrations are refused as by `sessions`.
    if not dry_run and not only:  # backup retention deletes in the backups directory
        require_safe_files(path, bk.backup_dir_from(settings, path))
    conn = open_db(db_path, "read" if dry_run else "update").db
    results, retention = prune_and_retain(
        conn, path, settings, datetime.now(UTC), policy=policy, dry_run=dry_run, backups=not only
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
    _print(results, retention, dry_run)


def register(cli: click.Group) -> None:
    """Add the command to the CLI (``ingestd.cli`` finds this function)."""
    cli.add_command(prune_cmd)


def _print(results: list[pr.PruneResult], retention: bk.RetentionResult | None, dry_run: bool) -> None:
    """The human summary: rows per table (each key on a dry run), then backups."""
    verb = "would delete" if dry_run else "deleted"
    for r in results:
        click.echo(f"{r.table}: {verb} {r.rows} rows with occurred_at < {r.cutoff}", nl=False)
        click.echo("" if dry_run else f" in {r.batches} batches (receipt #{r.receipt_id})")
        if dry_run:
            for at, rid in r.keys:
                click.echo(f"  {r.table} id={rid} occurred_at={at}")
    if retention is not None:
        said = f"backups in {retention.directory}: {verb} {len(retention.deleted)}, kept {len(retention.kept)}"
        click.echo("\n".join(hang("", said, shutil.get_terminal_size().columns, "  ")))
        for n in retention.deleted:
            click.echo(f"  {n}")
