"""``ingestd db path`` and ``ingestd db datasette-config``: the database file, for other tools."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from ingestd.commands._common import db_option, resolve_db
from ingestd.report.datasette import metadata


def register(cli: click.Group) -> None:
    @cli.group("db")
    def db_group() -> None:
        """The database file, for other tools (Datasette, sqlite3, backups)."""

    @db_group.command("path")
    @db_option
    def path_cmd(db_path: Path | None) -> None:
        """Print the database's absolute path (what --db / INGESTD_DB / the default resolve to)."""
        click.echo(str(resolve_db(db_path).expanduser().absolute()))

    @db_group.command("datasette-config")
    @db_option
    @click.option(
        "--out",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Write the metadata to this file [default: stdout].",
    )
    def datasette_config_cmd(db_path: Path | None, out: Path | None) -> None:
        """Datasette metadata for the database: table descriptions, storage tables hidden, search wired
        to search_docs, canned queries. Use: datasette "$(ingestd db path)" -m metadata.json"""
        doc = orjson.dumps(metadata(resolve_db(db_path).stem), option=orjson.OPT_INDENT_2) + b"\n"
        if out is None:
            click.echo(doc.decode(), nl=False)
            return
        if out.exists():
            raise click.UsageError(f"{out} exists: remove it or give another --out")
        out.write_bytes(doc)
        click.echo(f"wrote {out}", err=True)
