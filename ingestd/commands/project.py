"""``ingestd project --store URL``: fold the central store's new log rows into its projections (SPEC §13)."""

from __future__ import annotations

import click

from ingestd.commands._common import IntRange, emit_json, json_option, store_connection, store_option
from ingestd.errors import ConfigError


def register(cli: click.Group) -> None:
    @cli.command("project")
    @store_option
    @click.option("--batch-rows", type=IntRange(min=1), default=None, help="Log rows per transaction.")
    @json_option
    def project_cmd(store_url: str | None, batch_rows: int | None, as_json: bool) -> None:
        """Run the projector over the central log: incremental, resumable, and safe to run from
        several machines at once (slices are serialised by a PostgreSQL advisory lock)."""
        from ingestd.central.pg import describe
        from ingestd.central.project import DEFAULT_BATCH_ROWS, project_store

        if not store_url:
            raise ConfigError("give the central store: --store postgresql://user@host/db")
        result = project_store(store_connection(store_url), batch_rows=batch_rows or DEFAULT_BATCH_ROWS)
        if as_json:
            emit_json(result.to_json())
            return
        click.echo(
            f"{describe(store_url)}: folded {result.log_rows:,} new log rows in {result.slices} slices "
            f"({result.sessions} session folds); projected through central log id {result.projected_through}"
            + ("; the projector's rules changed, so everything was re-folded" if result.reprojected else "")
        )
