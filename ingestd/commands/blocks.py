"""``ingestd blocks``: usage and cost per 5-hour billing window, the active one with its burn rate."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import db_option, emit_json, json_option, note_stale, open_reader
from ingestd.commands.sessions import WINDOW_HELP
from ingestd.report.blocks import blocks_report
from ingestd.report.window import make_window, resolve_zone


def register(cli: click.Group) -> None:
    @cli.command("blocks")
    @db_option
    @click.option("--active", "active_only", is_flag=True, help="Only the block running now.")
    @click.option("--since", default=None, help=f"From. {WINDOW_HELP}")
    @click.option("--until", default=None, help=f"Until (exclusive; a date is included). {WINDOW_HELP}")
    @click.option("--tz", "tz_name", default=None, help="IANA zone times are shown in [default: the machine's].")
    @json_option
    def blocks_cmd(
        db_path: Path | None,
        active_only: bool,
        since: str | None,
        until: str | None,
        tz_name: str | None,
        as_json: bool,
    ) -> None:
        """Usage in 5-hour billing blocks: a block starts at the hour of its first activity and lasts
        5 hours (aligned to Claude Code's official reset times where the status line gave them):
        tokens, messages, models and cost per block; for the active one, the burn rate and the cost
        projected at its end."""
        env = dict(os.environ)
        zone = resolve_zone(tz_name, env)
        now = datetime.now(UTC)
        window = make_window(since, until, zone, now)
        conn, stale = open_reader(db_path, None, refuse_stale=True)
        doc = note_stale(blocks_report(conn, now=now, zone=zone, window=window, active_only=active_only), stale)
        if as_json:
            emit_json(doc)
            return
        from rich.console import Console

        from ingestd.report.blocksview import render_blocks

        render_blocks(Console(), doc, zone)
