"""``ingestd cost``: totals per bucket, exact cost and unpriced usage, grouped."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import (
    db_option,
    emit_json,
    json_option,
    note_stale,
    open_reader,
    store_option,
)
from ingestd.commands.sessions import WINDOW_HELP
from ingestd.report.cost import GROUPINGS, check_by, cost_report
from ingestd.report.window import make_window, resolve_zone


def register(cli: click.Group) -> None:
    @cli.command("cost")
    @db_option
    @store_option
    @click.option(
        "--by",
        "by_levels",
        multiple=True,
        help=f"Group rows by this: {', '.join(GROUPINGS)}; two levels as --by day,model or --by day --by model.",
    )
    @click.option("--host", "host", default=None, help="Only usage logged by this host (its host_id, see status).")
    @click.option("--since", default=None, help=f"From. {WINDOW_HELP}")
    @click.option("--until", default=None, help=f"Until (exclusive; a date is included). {WINDOW_HELP}")
    @click.option(
        "--tz", "tz_name", default=None, help="IANA zone whose local days --by day uses [default: the machine's]."
    )
    @json_option
    def cost_cmd(
        db_path: Path | None,
        store_url: str | None,
        by_levels: tuple[str, ...],
        host: str | None,
        since: str | None,
        until: str | None,
        tz_name: str | None,
        as_json: bool,
    ) -> None:
        """Tokens per bucket and cost, from the rollup; unpriced usage per model beside the total.

        Usage is counted per UTC quarter-hour (how the rollup stores it), so --since/--until are
        widened to whole quarter-hours and local days are exact in every zone, DST days included.
        --by week groups by ISO week (Monday first), --by month by calendar month, both local.
        --by agent is the one grouping the rollup cannot answer (it has no agent column): it scans
        token_usage in the window instead, and says so ("source": "token_usage").
        """
        by = ",".join(p.strip() for v in by_levels for p in v.split(",")) or None
        try:
            check_by(by)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--by") from None
        env = dict(os.environ)
        zone = resolve_zone(tz_name, env)
        window = make_window(since, until, zone, datetime.now(UTC))
        conn, stale = open_reader(db_path, store_url, refuse_stale=True)
        doc = cost_report(conn, by=by, window=window, zone=zone, host=host)
        if stale is not None:
            # Figures of older rules are not the cost: say so where scripts look (cost_complete).
            doc["cost_complete"] = False
        note_stale(doc, stale)
        if as_json:
            emit_json(doc)
            return
        from rich.console import Console

        from ingestd.report.render import render_cost

        render_cost(Console(), doc, env.get("HOME"), store=store_url is not None)
