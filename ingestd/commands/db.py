"""``ingestd db path``, ``ingestd db datasette-config`` and ``ingestd db vacuum``: the database file."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path

import click
import orjson

from ingestd.commands._common import db_option, emit_json, json_option, open_db, resolve_db
from ingestd.daemon import presence
from ingestd.errors import ConfigError
from ingestd.report.datasette import metadata
from ingestd.store.connection import storage_errors


def vacuum(path: Path) -> tuple[int, int]:
    """``VACUUM`` the database at ``path``: its free pages given back to the file system. Returns
    (file bytes before, after). Holds the write lock throughout (writers wait); the rebuilt copy
    goes to a temporary file, not memory.

    Raises:
        ConfigError: a daemon serves the database (its hooks would wait on the lock), or there is none.
        StorageError: the VACUUM failed (the file is as it was: SQLite's VACUUM is a transaction).
    """
    if not path.exists():
        raise ConfigError(f"no database at {path}: pass --db")
    found = presence.detect(path, datetime.now(UTC), probe=False)
    if found.state in ("running", "unhealthy", "not_responding"):
        raise ConfigError(
            f"a daemon (pid {found.pid}) serves {path}: its hooks would wait while the file is rebuilt;"
            " stop it first (`ingestd service stop`, or end `ingestd serve`), then run this again"
        )
    before = path.stat().st_size
    conn = open_db(path, "update").db
    with contextlib.closing(conn), storage_errors():
        conn.execute("PRAGMA temp_store = FILE")  # the copy VACUUM builds: on disk, not in memory
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return before, path.stat().st_size


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

    @db_group.command("vacuum")
    @db_option
    @json_option
    def vacuum_cmd(db_path: Path | None, as_json: bool) -> None:
        """Give the file's free pages back to the disk (SQLite VACUUM): after a migration that
        rewrote the log, or a large prune. Refused while a daemon serves the database; needs free
        disk space about the database's size meanwhile."""
        path = resolve_db(db_path)
        before, after = vacuum(path)
        if as_json:
            emit_json({"db": str(path), "before_bytes": before, "after_bytes": after})
            return
        click.echo(f"vacuumed {path}: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")
