"""``ingestd search``: full-text search over prompts, assistant text, tool inputs, titles and summaries."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import IntRange, db_option, emit_json, json_option, note_stale, open_reader
from ingestd.core.search import KINDS
from ingestd.report.search import DEFAULT_LIMIT, MAX_LIMIT, SORTS, search_report
from ingestd.report.window import make_window, resolve_zone

WINDOW_HELP = "today, yesterday, YYYY-MM-DD (local), YYYY-MM-DDTHH:MM (local), a zoned instant, or 7d / 12h."


def register(cli: click.Group) -> None:
    @cli.command("search")
    @db_option
    @click.argument("query", nargs=-1, required=True)
    @click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="Only this kind (repeatable).")
    @click.option("--project", default=None, help="Only projects whose real path contains this text.")
    @click.option("--session", default=None, help="Only this session (its id or a prefix of it).")
    @click.option("--since", default=None, help=f"Records at or after. {WINDOW_HELP}")
    @click.option("--until", default=None, help=f"Records before. {WINDOW_HELP}")
    @click.option(
        "--sort", type=click.Choice(SORTS), default="rank", show_default=True, help="Best match or newest first."
    )
    @click.option("--limit", type=IntRange(min=1, max=MAX_LIMIT), default=DEFAULT_LIMIT, show_default=True)
    @click.option(
        "--fts", is_flag=True, help='Read QUERY as SQLite FTS5 syntax (AND, OR, NOT, "phrase", prefix*, NEAR).'
    )
    @click.option("--tz", "tz_name", default=None, help="IANA zone for dates [default: the machine's].")
    @json_option
    def search_cmd(
        db_path: Path | None,
        query: tuple[str, ...],
        kinds: tuple[str, ...],
        project: str | None,
        session: str | None,
        since: str | None,
        until: str | None,
        sort: str,
        limit: int,
        fts: bool,
        tz_name: str | None,
        as_json: bool,
    ) -> None:
        """Find QUERY in user prompts (prompt), assistant text (text), tool inputs: commands, file paths,
        patterns, URLs, subagent prompts (tool), titles (title) and compaction summaries (summary).
        Every word must occur; punctuation needs no quoting (src/app.py finds that path). Results show
        the session, agent, time and a snippet; ingestd tree SESSION shows the rest."""
        env = dict(os.environ)
        zone = resolve_zone(tz_name, env)
        window = make_window(since, until, zone, datetime.now(UTC))
        conn, stale = open_reader(db_path, None)
        doc = search_report(
            conn,
            " ".join(query),
            window=window,
            kinds=kinds,
            project=project,
            session=session,
            limit=limit,
            sort=sort,
            fts=fts,
        )
        if as_json:
            emit_json(note_stale(doc, stale))
            return
        from rich.console import Console

        from ingestd.report.searchview import render_search

        render_search(Console(), doc, zone, env.get("HOME"))
