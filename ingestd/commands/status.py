"""``ingestd status``: database and ingestion health."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from ingestd.commands._common import (
    db_option,
    emit_json,
    json_option,
    load_settings,
    note_stale,
    open_db,
    resolve_db,
    store_connection,
    store_option,
)
from ingestd.commands._token import token_options
from ingestd.daemon import presence
from ingestd.errors import ConfigError
from ingestd.http import auth
from ingestd.report.status import status_report
from ingestd.store import stall


def _ship_to(env: dict[str, str]) -> str | None:
    """The ``ship_to`` setting (environment, then config file), for whether to speak of shipping.

    ``status`` is what one runs when something is wrong: a settings problem does not stop it (the
    commands that use the settings report it); shipping is then mentioned only if rows were shipped.
    """
    try:
        return load_settings({}, env).get_opt_str("ship_to")
    except ConfigError:
        return None


def register(cli: click.Group) -> None:
    @cli.command("status")
    @db_option
    @store_option
    @click.option("--no-stat", "no_stat", is_flag=True, help="Do not compare tail checkpoints with the files on disk.")
    @token_options(
        "The daemon's token is in this env variable.",
        "The daemon's token is in this file (as `serve --token-file`): sent with the health probe.",
    )
    @click.option("--verbose", "-v", is_flag=True, help="Also the rows per table and every listed quarantined record.")
    @json_option
    def status_cmd(
        db_path: Path | None,
        store_url: str | None,
        no_stat: bool,
        token_env: str | None,
        token_file: Path | None,
        verbose: bool,
        as_json: bool,
    ) -> None:
        """The answer first: whether the daemon runs (pid, address, uptime, version), the last hook
        and transcript line received, the tail lag, and each problem with its fix. Then sessions,
        agents, database, schema, host id and shipping, last commit, watchdog window, oversized
        lines, last prune and backup; rows per table with --verbose (always in --json). With the
        daemon down, statuses are labelled as of when it last wrote.

        With --store: the central store's ledger, hosts and their high-water marks, projector lag,
        rows, statuses and quarantined records.

        A daemon with a token answers its health probe only with that token (--token-file or
        --token-env, as given to `serve`); without it, status says it runs but not how it is.
        """
        if store_url:
            from ingestd.central.check import status_report as central_status

            cdoc = central_status(store_connection(store_url, autocommit=True), now=datetime.now(UTC))
            if as_json:
                emit_json(cdoc)
                return
            _print_central(cdoc)
            return
        doc = _local_status(db_path, stat_files=not no_stat, token_env=token_env, token_file=token_file)
        if as_json:
            emit_json(doc)
            return
        from rich.console import Console

        from ingestd.report.statusview import render_status

        render_status(Console(), doc, verbose=verbose)


def _local_status(
    db_path: Path | None, *, stat_files: bool, token_env: str | None, token_file: Path | None
) -> dict[str, Any]:
    """The local database's status document, with the daemon's presence and health (probed with
    its token when one is given), its writers' stalls and the staleness of the projection."""
    path = resolve_db(db_path)
    opened = open_db(db_path, "read")
    conn, stale = opened.db, opened.stale
    now = datetime.now(UTC)
    token = auth.load_token(env_name=token_env, file=token_file, env=dict(os.environ))
    daemon = presence.detect(path, now, token=token).to_json()
    served = Path(daemon["db"]) if daemon["db"] else path  # the daemon's name for it (a link's differs)
    doc = status_report(
        conn, now=now, db_path=path, stat_files=stat_files, daemon=daemon, ship_to=_ship_to(dict(os.environ))
    )
    # the daemon's writers retrying a transient refusal (busy, full, I/O), from its mirror file
    doc["stalls"] = stall.read_mirror(served, now.timestamp())
    note_stale(doc, stale)
    return doc


def _print_central(doc: dict[str, Any]) -> None:
    """The central store's status: ledger, projector, statuses, then one row per host."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(show_header=False, title="ingestd status (central store)", title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    sc = doc["schema"]
    t.add_row("schema", f"pg/{sc['version']:04d}_{sc['name']}" if sc["version"] is not None else "none")
    if sc["pending"] or sc["problems"]:
        t.add_row("ledger", "; ".join([*sc["problems"], *(f"pending {p}" for p in sc["pending"])]))
    proj = doc.get("projector")
    if proj:
        t.add_row(
            "projector",
            f"folded through central log id {proj['projected_through']:,} of {proj['log_max_id']:,}"
            f" ({proj['rows_behind']:,} rows behind)",
        )
        t.add_row("sessions", ", ".join(f"{k} {v}" for k, v in doc["sessions"]["by_status"].items()) or "none")
        t.add_row("agents", ", ".join(f"{k} {v}" for k, v in doc["agents"]["by_status"].items()) or "none")
        t.add_row("unpriced models", ", ".join(doc["unpriced"]) or "none")
    console.print(t)
    from rich.table import Column

    hosts = Table(
        Column("host", overflow="fold", min_width=8),
        "instance",
        "shipped through",
        "rows shipped",
        "newest log row",
        "last ship (UTC)",
    )
    for h in doc["hosts"]:
        hosts.add_row(
            h["host_id"],
            h["instance"][:8],
            f"{h['shipped_through']:,}",
            f"{h['rows_shipped']:,}",
            h["log_as_of"] or "-",
            h["last_shipped_at"],
        )
    console.print(hosts)
    for h in doc["hosts"]:
        if h["warning"]:
            console.print(f"warning: {h['warning']}", style="yellow")
    if "quarantine" in doc:
        from ingestd.report.statusview import render_quarantine

        render_quarantine(console, doc["quarantine"])
