"""``ingestd status``: database and ingestion health."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import db_option, emit_json, json_option, open_read_db, resolve_db
from ingestd.report.status import status_report
from ingestd.store import stall


def register(cli: click.Group) -> None:
    @cli.command("status")
    @db_option
    @click.option("--no-stat", "no_stat", is_flag=True, help="Do not compare tail checkpoints with the files on disk.")
    @json_option
    def status_cmd(db_path: Path | None, no_stat: bool, as_json: bool) -> None:
        """Schema version, database size, rows per table, activity, last ingest and hook, tail lag,
        skipped lines, unpriced models, last prune and backup."""
        path = resolve_db(db_path)
        doc = status_report(open_read_db(db_path), now=datetime.now(UTC), db_path=path, stat_files=not no_stat)
        # the daemon's writers retrying a transient refusal (busy, full, I/O), from its mirror file
        doc["stalls"] = stall.read_mirror(path, time.time())
        if as_json:
            emit_json(doc)
            return
        from rich.console import Console

        from ingestd.report.render import render_status

        render_status(Console(), doc)
