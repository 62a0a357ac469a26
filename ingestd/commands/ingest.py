"""``ingestd ingest [--db PATH] [--projects DIR ...] [--json]``: backfill / catch-up (SPEC §9)."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import (
    db_option,
    default_projects,
    emit_json,
    json_option,
    load_settings,
    open_db,
    projects_option,
    refuse_config_dir_roots,
    refuse_overlapping_roots,
    resolve_db,
)
from ingestd.core.timefmt import from_epoch_ns
from ingestd.core.touch import Ctx
from ingestd.daemon import identitylock
from ingestd.errors import ConfigError
from ingestd.ingest.backfill import ingest_roots
from ingestd.ingest.readfile import TORN_TAIL_GRACE_S
from ingestd.ingest.summary import Summary
from ingestd.report.words import plural
from ingestd.store.connection import Db
from ingestd.store.identity import database_identity


def _human(s: Summary) -> None:
    d = s.to_json()
    unreadable = f", {d['files_unreadable']} unreadable" if d["files_unreadable"] else ""
    unreadable += f", {d['files_vanished']} vanished before being read" if d["files_vanished"] else ""
    folders = f"  {plural(d['dirs_unreadable'], 'folder')} unreadable" if d["dirs_unreadable"] else ""
    click.echo(
        f"files {d['files']} ({d['files_read']} read, {d['files_unchanged']} unchanged{unreadable}){folders}  "
        f"lines {d['lines']}  bytes {d['bytes']}  new rows {d['rows_inserted']}"
    )
    click.echo(f"sessions {d['sessions']}  agents {d['agents']}  messages {d['messages']}")
    skipped = ", ".join(f"{k} {v}" for k, v in d["skipped"].items()) or "none"
    click.echo(f"skipped lines: {skipped}  recovered {d['recovered']}  resets {d['resets']}")
    if d["unread"]["bytes"]:
        u = d["unread"]
        click.echo(
            f"unread: {plural(u['bytes'], 'byte')} of a last line without its newline in "
            f"{plural(u['files'], 'file')} (read once the file is idle {TORN_TAIL_GRACE_S:g} s, if it is JSON)"
        )
    quarantined = ", ".join(f"{k} {v}" for k, v in d["quarantined"].items())
    if quarantined or d["oversized"]:
        click.echo(
            f"quarantined records: {quarantined or 'none'}  oversized lines {d['oversized']}  (see `ingestd status`)"
        )
    click.echo(f"elapsed {d['elapsed_s']} s  {d['mb_per_s'] or 0} MB/s")


def _warn_clock(conn: Db) -> None:
    """Say on stderr, loudly, what suggests a wrong clock (``status``'s ``clock`` rows)."""
    from ingestd.report.status import clock_section, clock_warnings  # only ingest's end needs it

    for text in clock_warnings(clock_section(conn, datetime.now(UTC))):
        click.secho(f"warning: {text}", err=True, fg="red", bold=True)


def run_ingest(db_path: Path | None, projects: tuple[Path, ...], *, show_progress: bool) -> Summary:
    """Open the database, ingest the roots, return the summary (shared with the demo).

    Holds the shared identity lock (``ingestd.daemon.identitylock``) throughout: the host id read
    at the start stamps every edge, so ``ship --set-host-id`` is refused meanwhile.
    """
    roots = list(projects) or default_projects(dict(os.environ))
    for r in roots:
        if not r.is_dir():
            raise ConfigError(f"projects root {r} is not a readable directory: pass --projects DIR")
    refuse_config_dir_roots(roots)
    refuse_overlapping_roots(roots)
    path = resolve_db(db_path)
    # held from before the database is opened (opening may re-project with the identity) to the end:
    # `ship --set-host-id` refuses meanwhile. Taken again once opened: a database this run creates
    # is locked as soon as it exists (a second shared hold of an existing one costs nothing).
    with identitylock.shared(path):
        try:
            conn = open_db(path).db
        except OSError as e:
            raise ConfigError(f"cannot open the database: {e}: pass --db PATH") from e
        with identitylock.shared(path), contextlib.closing(conn):
            # closed here, not when collected: the last close checkpoints and removes the -wal / -shm
            try:
                ctx = database_identity(conn)
                now = from_epoch_ns(time.time_ns())
                summary = _ingest(conn, roots, now, ctx, show_progress)
                _warn_clock(conn)
                return summary
            except OSError as e:
                raise ConfigError(f"cannot read the projects root: {e}") from e


def _ingest(conn: Db, roots: list[Path], now: str, ctx: Ctx, show_progress: bool) -> Summary:
    conf = load_settings({})
    cap = conf.get_int("max_line_bytes")
    read = functools.partial(
        ingest_roots,
        conn,
        roots,
        now=now,
        ctx=ctx,
        max_line_bytes=cap,
        checkpointer=True,
    )
    if not show_progress:
        return read()
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress(
        "[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn()
    ) as bar:
        task = bar.add_task("ingest", total=None)
        return read(on_total=lambda n: bar.update(task, total=n), progress=lambda n: bar.advance(task, n))


def register(cli: click.Group) -> None:
    @cli.command("ingest")
    @db_option
    @projects_option
    @json_option
    def ingest_cmd(db_path: Path | None, projects: tuple[Path, ...], as_json: bool) -> None:
        """Backfill or catch up the transcripts of the projects roots, then exit."""
        summary = run_ingest(db_path, projects, show_progress=not as_json and sys.stderr.isatty())
        if as_json:
            emit_json(summary.to_json())
        else:
            _human(summary)
