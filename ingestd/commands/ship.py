"""``ingestd ship [--to URL] [--dry-run]``: copy the local log into the central PostgreSQL store (SPEC §13)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ingestd.commands._common import (
    IntRange,
    db_option,
    emit_json,
    json_option,
    load_settings,
    open_db,
    require_db,
    require_safe_files,
    resolve_db,
    store_connection,
)
from ingestd.errors import ConfigError


@click.command("ship")
@db_option
@click.option(
    "--to",
    "to_url",
    default=None,
    metavar="URL",
    help="The central store, postgresql://user@host/db (no password in it: ~/.pgpass or PGPASSWORD) [setting ship_to].",
)
@click.option("--dry-run", is_flag=True, help="Say what would be shipped; send nothing.")
@click.option(
    "--batch-rows", type=IntRange(min=1), default=None, help="Rows per transaction [setting ship_batch_rows]."
)
@click.option(
    "--batch-bytes",
    type=IntRange(min=1),
    default=None,
    help="Payload bytes per transaction, at least one row [setting ship_batch_bytes].",
)
@click.option(
    "--verify",
    is_flag=True,
    help="Compare this database's log with the store's rows of its host, key by key, and name what is"
    " missing; send nothing (exit 1 when rows below the mark are missing).",
)
@click.option(
    "--set-host-id",
    "host_id",
    default=None,
    metavar="NAME",
    help="Give this database its own host id (meta.host_id) and re-stamp its edges, then exit; ships nothing.",
)
@json_option
def ship_cmd(
    db_path: Path | None,
    to_url: str | None,
    dry_run: bool,
    batch_rows: int | None,
    batch_bytes: int | None,
    verify: bool,
    host_id: str | None,
    as_json: bool,
) -> None:
    """Ship every local log row the central store does not have yet.

    One PostgreSQL transaction per batch holds the rows (COPY) and this host's high-water
    mark with its evidence (a digest of every key up to it), so an interrupted ship resumes
    exactly where it stopped, and a database restored from a backup ships every row the store
    lacks. Rows are keyed by (host_id, idempotency key): shipping again adds nothing.

    With --verify: compare the local log with the store's rows of this host and name the rows
    missing below the mark (exit 1), those pending past it and those only the store holds.

    With --set-host-id NAME: when two machines share a host name, give this database its own
    host id before it first ships (the daemon stopped); nothing is shipped.
    """
    if host_id is not None:
        _set_host_id(db_path, host_id, as_json)
        return
    from ingestd.central.pg import describe
    from ingestd.central.ship import pending, ship

    settings = load_settings({"ship_to": to_url, "ship_batch_rows": batch_rows, "ship_batch_bytes": batch_bytes})
    url = settings.get_opt_str("ship_to")
    if not url:
        raise ConfigError("give the central store: --to postgresql://user@host/db (or the ship_to setting)")
    where = describe(url)
    # a dry run changes nothing here either: no migration, no re-projection, no identity written
    local = open_db(db_path, "read" if dry_run or verify else "update").db
    pg = store_connection(url)
    if verify:
        _verify(local, pg, where, as_json)
        return
    todo = pending(local, pg, sizes=dry_run)
    if dry_run:
        _say(
            as_json,
            {"dry_run": True, "store": where, **todo.to_json()},
            (
                f"would ship {todo.rows:,} log rows ({todo.payload_bytes:,} payload bytes, local ids "
                f"{todo.first_id}..{todo.last_id}) of host {todo.host_id} to {where} "
                + (
                    f"(this log is not the one the store holds through local id {todo.shipped_through}:"
                    " every row is checked, those the store lacks sent)"
                    if todo.diverged
                    else f"(shipped through local id {todo.shipped_through})"
                )
                if todo.rows
                else f"nothing to ship: host {todo.host_id} is shipped through local id "
                f"{todo.shipped_through} to {where}"
            ),
        )
        return
    size = settings.get_int("ship_batch_rows")
    nbytes = settings.get_int("ship_batch_bytes")
    if sys.stderr.isatty() and not as_json and todo.rows:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        with Progress(
            TextColumn("ship"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True
        ) as bar:
            task = bar.add_task("ship", total=todo.rows)
            result = ship(local, pg, batch_rows=size, batch_bytes=nbytes, on_batch=lambda n: bar.advance(task, n))
    else:
        result = ship(local, pg, batch_rows=size, batch_bytes=nbytes)
    _say(
        as_json,
        {"dry_run": False, "store": where, **result.to_json()},
        f"shipped {result.sent:,} log rows ({result.inserted:,} new to the store) of host {result.host_id} "
        f"to {where} in {result.batches} batches; shipped through local id {result.shipped_through}",
    )


def _verify(local: Any, pg: Any, where: str, as_json: bool) -> None:
    """``--verify``: the comparison, as JSON or as lines; exit 1 when it is not ``ok``."""
    from ingestd.central.ship import verify_shipped

    got = verify_shipped(local, pg)
    if as_json:
        emit_json({"store": where, **got.to_json()})
    else:
        click.echo(
            f"host {got.host_id}: {got.local_rows:,} log rows here, {got.store_rows:,} in {where}; shipped"
            f" through local id {got.shipped_through:,} (evidence {got.evidence})"
        )
        if got.missing:
            ids = ", ".join(str(i) for i in got.missing_ids) + (", ..." if got.missing > len(got.missing_ids) else "")
            click.echo(f"missing below the mark: {got.missing:,} rows (local ids {ids}): run `ingestd ship`")
        if got.evidence == "differs":
            click.echo("this log is not the one the store holds up to the mark: the next ship checks every row")
        click.echo(
            f"pending past the mark: {got.pending:,} rows; only in the store: {got.store_only:,} rows"
            + (" (rows this database no longer holds, e.g. restored from an older backup)" if got.store_only else "")
        )
    if not got.ok:
        sys.exit(1)


def _say(as_json: bool, doc: dict[str, object], line: str) -> None:
    """The answer: ``doc`` as one JSON document with ``--json``, else ``line``."""
    if as_json:
        emit_json(doc)
    else:
        click.echo(line)


def register(cli: click.Group) -> None:
    """Add the command to the CLI (``ingestd.cli`` finds this function)."""
    cli.add_command(ship_cmd)


def _set_host_id(db_path: Path | None, name: str, as_json: bool) -> None:
    """``--set-host-id``: refused while a daemon serves the database or an ``ingest`` writes to it (each
    keeps the id it started with: ``ingestd.daemon.identitylock``).

    The lock is taken before the database is opened (opening migrates and may re-project), so a
    refusal writes nothing; the connection is closed before the lock is released (``DaemonLock``).
    """
    from ingestd.central.hostid import check_host_id, set_host_id
    from ingestd.daemon import identitylock, lock

    check_host_id(name)
    path = resolve_db(db_path)
    require_db(path)
    require_safe_files(path)
    held = lock.acquire(path)  # DaemonError naming the daemon's pid when one runs
    try:
        with identitylock.exclusive(path):  # DaemonError while an `ingest` runs with the current id
            conn = open_db(path, "update").db
            try:
                done = set_host_id(conn, name)
            finally:
                conn.close()
    except BaseException:
        held.discard()  # removed between the check and the lock: the empty file the lock made goes too
        raise
    held.release()
    nothing = "nothing was shipped: run `ingestd ship` to ship"
    if done.old == done.new:
        _say(as_json, done.to_json(), f"host id is already {done.new!r}: nothing was changed; {nothing}")
    else:
        line = f"host id {done.old!r} -> {done.new!r}; {done.edges} edges re-stamped; {nothing} under the new id"
        _say(as_json, done.to_json(), line)
