"""``ingestd status``: database and ingestion health."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import (
    db_option,
    emit_json,
    json_option,
    open_read_db,
    resolve_db,
    store_connection,
    store_option,
)
from ingestd.report.status import status_report


def register(cli: click.Group) -> None:
    @cli.command("status")
    @db_option
    @store_option
    @click.option("--no-stat", "no_stat", is_flag=True, help="Do not compare tail checkpoints with the files on disk.")
    @json_option
    def status_cmd(db_path: Path | None, store_url: str | None, no_stat: bool, as_json: bool) -> None:
        """Schema version, database size, host id and shipping, rows per table, activity, last ingest
        and hook, tail lag, skipped lines, unpriced models, last prune and backup.

        With --store: the central store's ledger, hosts and their high-water marks, projector lag,
        rows and statuses.
        """
        if store_url:
            from ingestd.central.check import status_report as central_status

            cdoc = central_status(store_connection(store_url, autocommit=True), now=datetime.now(UTC))
            if as_json:
                emit_json(cdoc)
                return
            _print_central(cdoc)
            return
        path = resolve_db(db_path)
        doc = status_report(open_read_db(db_path), now=datetime.now(UTC), db_path=path, stat_files=not no_stat)
        if as_json:
            emit_json(doc)
            return
        from rich.console import Console

        from ingestd.report.render import render_status

        render_status(Console(), doc)


def _print_central(doc: dict[str, object]) -> None:
    """The central store's status as plain lines."""
    import orjson

    for key, value in doc.items():
        click.echo(f"{key}: {orjson.dumps(value).decode()}")
