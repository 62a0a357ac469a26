"""``ingestd sessions``: one line per session, most recently active first."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import (
    IntRange,
    db_option,
    emit_json,
    json_option,
    note_stale,
    open_reader,
    store_option,
)
from ingestd.report.sessions import sessions_report
from ingestd.report.window import make_window, resolve_zone

DEFAULT_LIMIT = 20
SCREEN_LINES = 5  # the title, header, rule and hidden-columns note, and the shell's next prompt


def screenful() -> int:
    """The sessions one terminal screen holds under the table's own lines (``DEFAULT_LIMIT`` at most):
    at 24 lines the header stays on screen."""
    return max(1, min(DEFAULT_LIMIT, shutil.get_terminal_size().lines - SCREEN_LINES))


WINDOW_HELP = (
    "today, yesterday, YYYY-MM-DD (a local day, included), YYYY-MM-DDTHH:MM (local), a zoned instant, or 7d / 12h."
)


def register(cli: click.Group) -> None:
    @cli.command("sessions")
    @db_option
    @store_option
    @click.option("--since", default=None, help=f"Active at or after. {WINDOW_HELP}")
    @click.option("--until", default=None, help=f"Started before. {WINDOW_HELP}")
    @click.option("--project", default=None, help="Only projects whose real path contains this text.")
    @click.option(
        "--limit",
        type=IntRange(min=1),
        default=None,
        help=f"At most this many sessions, newest first [default: a screenful ({DEFAULT_LIMIT} at most); --json: all].",
    )
    @click.option("--all", "show_all", is_flag=True, help="Every session in the window (no limit).")
    @click.option("--tz", "tz_name", default=None, help="IANA time zone for dates [default: the machine's].")
    @json_option
    def sessions_cmd(
        db_path: Path | None,
        store_url: str | None,
        since: str | None,
        until: str | None,
        project: str | None,
        limit: int | None,
        show_all: bool,
        tz_name: str | None,
        as_json: bool,
    ) -> None:
        """The newest sessions (a screenful, 20 at most, unless --limit N or --all; --json: all unless
        --limit N) with project, title, times, status, agents, tokens and cost (+? marks unpriced usage)."""
        if show_all and limit is not None:
            raise click.UsageError("--all and --limit exclude each other")
        # the terminal shows a screenful; --json stays complete (as /api/sessions) unless asked to limit
        limit = None if show_all or (as_json and limit is None) else (limit or screenful())
        env = dict(os.environ)
        zone = resolve_zone(tz_name, env)
        window = make_window(since, until, zone, datetime.now(UTC))
        conn, stale = open_reader(db_path, store_url, refuse_stale=True)
        doc = sessions_report(conn, window=window, project=project, limit=limit)
        if as_json:
            emit_json(note_stale(doc, stale))
            return
        from rich.console import Console

        from ingestd.report.render import render_sessions

        render_sessions(Console(), doc, zone, env.get("HOME"), store=store_url is not None)
