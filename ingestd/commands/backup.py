"""``ingestd backup [--dir DIR] [--json]``: an online, consistent, checked copy, then backup retention."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.commands._common import db_option, emit_json, json_option, load_settings, require_safe_files, resolve_db
from ingestd.errors import ConfigError
from ingestd.report.words import plural
from ingestd.retention import backup as bk
from ingestd.store.connection import on_read_only_media


def register(cli: click.Group) -> None:
    @cli.command("backup")
    @db_option
    @click.option(
        "--dir",
        "directory",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Backup directory [setting backup_dir; default: backups/ next to the database].",
    )
    @json_option
    def backup_cmd(db_path: Path | None, directory: Path | None, as_json: bool) -> None:
        """Copy the live database safely (the daemon may keep running), check it, apply backup retention."""
        settings = load_settings({"backup_dir": str(directory) if directory else None})
        path = resolve_db(db_path)
        if not path.exists():
            raise ConfigError(f"no database at {path}: pass --db")
        out_dir = bk.backup_dir_from(settings, path)
        if on_read_only_media(out_dir / "x" if out_dir.is_dir() else out_dir):
            raise ConfigError(
                f"the backups directory {out_dir} is on a read-only file system: pass --dir DIR on a writable one"
            )
        require_safe_files(path, out_dir)
        result = bk.backup(
            path,
            now=datetime.now(UTC),
            directory=out_dir,
            retention_days=settings.get_int("backup_retention_days"),
            keep_newest=settings.get_int("backup_keep_newest"),
        )
        if as_json:
            emit_json(result.to_json())
            return
        click.echo(
            f"backup {result.path}: {result.bytes} bytes, integrity {result.integrity}, {result.elapsed_s:.2f} s"
        )
        for t, n in result.counts.items():
            click.echo(f"  {t}: {plural(n, 'row')}")
        ret = result.retention
        click.echo(f"retention: deleted {len(ret.deleted)}, kept {len(ret.kept)} in {ret.directory}")
