"""``ingestd status``: database and ingestion health."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import db_option, emit_json, json_option, open_read_db, resolve_db
from ingestd.daemon import presence
from ingestd.report.status import status_report
from ingestd.store import stall


def register(cli: click.Group) -> None:
    @cli.command("status")
    @db_option
    @click.option("--no-stat", "no_stat", is_flag=True, help="Do not compare tail checkpoints with the files on disk.")
    @json_option
    def status_cmd(db_path: Path | None, no_stat: bool, as_json: bool) -> None:
        """Whether the daemon runs (pid, address, uptime, version), schema version, database size, rows
        per table, activity, last ingest, hook and commit, tail lag, watchdog window, skipped lines,
        unpriced models, last prune and backup. With the daemon down, statuses are labelled as of when
        it last wrote."""
        path = resolve_db(db_path)
        conn = open_read_db(db_path)
        now = datetime.now(UTC)
        daemon = presence.detect(path, now).to_json()
        doc = status_report(conn, now=now, db_path=path, stat_files=not no_stat, daemon=daemon)
        # the daemon's writers retrying a transient refusal (busy, full, I/O), from its mirror file
        doc["stalls"] = stall.read_mirror(path, time.time())
        if as_json:
            emit_json(doc)
            return
        from rich.console import Console

        from ingestd.report.render import render_status

        render_status(Console(), doc)
