"""``ingestd limits``: the official plan limits from the status line, and estimates from them."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import db_option, emit_json, json_option, note_stale, open_reader
from ingestd.report.limits import limits_lines, limits_report
from ingestd.report.short import hang
from ingestd.report.window import resolve_zone


def register(cli: click.Group) -> None:
    @cli.command("limits")
    @db_option
    @click.option("--history", is_flag=True, help="Every sample of each window, oldest first.")
    @click.option("--tz", "tz_name", default=None, help="IANA zone times are shown in [default: the machine's].")
    @json_option
    def limits_cmd(db_path: Path | None, history: bool, tz_name: str | None, as_json: bool) -> None:
        """The latest official 5-hour and 7-day percentages with their reset times and the sample's age
        (official: Claude Code's numbers, from its status line), the burn rate and when 100% would be
        reached at it (estimated by ingestd), and Claude Code's session cost estimate beside ingestd's
        exact one. Needs `ingestd statusline install`; Pro/Max subscriptions only."""
        zone = resolve_zone(tz_name, dict(os.environ))
        conn, stale = open_reader(db_path, None)
        doc = note_stale(limits_report(conn, now=datetime.now(UTC), zone=zone, history=history), stale)
        if as_json:
            emit_json(doc)
            return
        width = shutil.get_terminal_size().columns
        click.echo("\n".join(out for line in limits_lines(doc, zone) for out in hang("", line, width, "  ")))
