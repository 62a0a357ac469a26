"""``ingestd migrate [--status] [--json]``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ingestd.commands._common import db_option, emit_json, json_option, migration_status, open_db, resolve_db
from ingestd.core.ledger import Pin
from ingestd.errors import MigrationError
from ingestd.store import migrate as mig
from ingestd.store.connection import connect, free_bytes

# Free pages worth a word after a migration: at least this many bytes and a tenth of the file.
FREE_TO_MENTION = 1_000_000


def register(cli: click.Group) -> None:
    @cli.command("migrate")
    @db_option
    @click.option("--status", "show_status", is_flag=True, help="List applied and pending migrations; change nothing.")
    @json_option
    def migrate_cmd(db_path: Path | None, show_status: bool, as_json: bool) -> None:
        """Apply pending schema migrations (or list them with --status); re-project when the rules changed."""
        path = resolve_db(db_path)
        if show_status:
            # Read-only: a database that does not exist yet is reported, not created.
            st = mig.status(connect(path, readonly=True) if path.exists() else connect(":memory:"))
            if as_json:
                emit_json(
                    {
                        "applied": [{"id": a.id, "name": a.name, "checksum": a.sha256} for a in st.applied],
                        "pending": [{"id": p.id, "name": p.name, "checksum": p.sha256} for p in st.pending],
                        "problems": list(st.problems),
                    }
                )
            else:
                for a in st.applied:
                    click.echo(f"applied  {a.stem}  {(a.sha256 or 'no checksum')[:12]}")
                for p in st.pending:
                    click.echo(f"pending  {p.stem}  {(p.sha256 or '')[:12]}")
                for problem in st.problems:
                    click.echo(f"problem  {problem}", err=True)
            if st.problems:
                raise MigrationError("; ".join(st.problems))
            return
        # A database projected by older rules is re-projected here too, not only by the next
        # writer: until then cost, sessions and titles would come from the old rules.
        created = not path.exists()  # a mistyped --db makes a new, empty database: say so
        opened = open_db(path, "migrate", applying=None if as_json else migration_status(sys.stdout))
        done, folded = list(opened.migrated), opened.reprojected
        free = free_bytes(opened.db)
        if as_json:
            emit_json(
                {
                    "created": created,
                    "applied": [{"id": p.id, "name": p.name} for p in done],
                    "reprojected_log_rows": folded,
                    # of those, the rows an interrupted re-projection had folded (it went on from them)
                    "resumed_log_rows": opened.resumed,
                    "free_bytes": free,
                }
            )
            return
        _say(path, done, folded, created=created, resumed=opened.resumed)
        if done and free >= FREE_TO_MENTION and free * 10 >= path.stat().st_size:
            click.echo(
                f"{free / 1e6:.1f} MB of the file are free pages the migration left (a table it rewrote):"
                f" `ingestd db vacuum --db {path}` gives them back (with the daemon stopped)"
            )


def _say(path: Path, done: list[Pin], folded: int | None, *, created: bool, resumed: int = 0) -> None:
    """The text report of ``migrate``: what was created, applied and re-projected."""
    if created:
        click.echo(
            f"created a new database at {path} (there was none): applied {len(done)} migrations;"
            " check --db if you meant an existing one"
        )
        return
    for p in done:
        click.echo(f"applied {p.stem}")
    if folded and resumed:
        click.echo(
            f"resumed a re-projection: {resumed} of {folded} log rows were already done; re-projected the rest:"
            " the projector's rules changed since this database was made"
        )
    elif folded:
        click.echo(f"re-projected {folded} log rows: the projector's rules changed since this database was made")
    elif folded is not None:
        click.echo("the projector's rules changed since this database was made; its log is empty: nothing re-projected")
    if not done and folded is None:
        click.echo("nothing pending: the schema is up to date")
