"""``ingestd migrate [--status] [--json]``."""

from __future__ import annotations

from pathlib import Path

import click

from ingestd.commands._common import db_option, emit_json, json_option, require_safe_files, resolve_db
from ingestd.errors import MigrationError
from ingestd.store import migrate as mig
from ingestd.store.connection import connect


def register(cli: click.Group) -> None:
    @cli.command("migrate")
    @db_option
    @click.option("--status", "show_status", is_flag=True, help="List applied and pending migrations; change nothing.")
    @json_option
    def migrate_cmd(db_path: Path | None, show_status: bool, as_json: bool) -> None:
        """Apply pending schema migrations (or list them with --status)."""
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
        require_safe_files(path)
        done = mig.migrate(connect(path))
        if as_json:
            emit_json({"applied": [{"id": p.id, "name": p.name} for p in done]})
        elif done:
            for p in done:
                click.echo(f"applied {p.stem}")
        else:
            click.echo("nothing pending: the schema is up to date")
