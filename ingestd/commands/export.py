"""``ingestd export --to DIR [SESSION] [--project TEXT] [--since WHEN]``: transcripts back from the log."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import db_option, emit_json, json_option, open_db
from ingestd.commands.sessions import WINDOW_HELP
from ingestd.report.sessions import sessions_report
from ingestd.report.tree import resolve_session
from ingestd.report.window import make_window, resolve_zone
from ingestd.retention.export import export, origins_of_sessions


def register(cli: click.Group) -> None:
    @cli.command("export")
    @db_option
    @click.argument("session", required=False)
    @click.option(
        "--to",
        "dest",
        required=True,
        type=click.Path(file_okay=False, path_type=Path),
        help="The projects tree to write (made if missing); an existing file with other bytes stops the export.",
    )
    @click.option("--project", default=None, help="Only sessions of projects whose real path contains this text.")
    @click.option("--since", default=None, help=f"Only sessions active at or after. {WINDOW_HELP}")
    @click.option("--tz", "tz_name", default=None, help="IANA time zone for dates [default: the machine's].")
    @json_option
    def export_cmd(
        db_path: Path | None,
        session: str | None,
        dest: Path,
        project: str | None,
        since: str | None,
        tz_name: str | None,
        as_json: bool,
    ) -> None:
        """Write transcripts back from the log, byte for byte, laid out as Claude Code lays them out
        (subagent files and .meta.json sidecars included): SESSION (an id or a unique prefix), the
        sessions --project / --since select, or every transcript. Exit 1 when a file could not be
        put back whole (an oversized line: its name and why are printed)."""
        if session is not None and (project is not None or since is not None):
            raise click.UsageError("give SESSION, or --project / --since, not both")
        opened = open_db(db_path, "read")
        conn = opened.db
        origins: set[str] | None = None
        if session is not None:
            origins = origins_of_sessions(conn, [resolve_session(conn, session)])
        elif project is not None or since is not None:
            window = make_window(since, None, resolve_zone(tz_name, dict(os.environ)), datetime.now(UTC))
            doc = sessions_report(conn, window=window, project=project, limit=None)
            origins = origins_of_sessions(conn, [s["session_id"] for s in doc["rows"]])
        summary = export(conn, dest, origins)
        if as_json:
            emit_json(summary.to_json())
        else:
            j = summary.to_json()
            click.echo(
                f"{j['written']} files written ({j['bytes_written']} bytes), {j['unchanged']} already there,"
                f" to {dest}"
                + (f"; {j['blank_lines']} blank lines restored as empty lines" if j["blank_lines"] else "")
            )
            for s in j["skipped"]:
                click.echo(f"not written: {s['origin']}: {s['reason']}", err=True)
        if summary.skipped:
            raise SystemExit(1)
