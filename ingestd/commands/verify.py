"""``ingestd verify [--db PATH] [--json]``: integrity checks; exit 1 naming each failure."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from ingestd.commands._common import (
    db_option,
    emit_json,
    json_option,
    open_db,
    resolve_db,
    store_connection,
    store_option,
)
from ingestd.errors import CheckFailed
from ingestd.projection.verify import run_checks
from ingestd.report.short import hang


def register(cli: click.Group) -> None:
    @cli.command("verify")
    @db_option
    @store_option
    @json_option
    def verify_cmd(db_path: Path | None, store_url: str | None, as_json: bool) -> None:
        """Check the ledger, append-only triggers, rollup, foreign keys, integrity and usage-in-log.

        Changes nothing (the trigger probe is rolled back). Exit 1 when any check fails.
        """
        if store_url:
            from ingestd.central.check import verify_checks
            from ingestd.central.pg import describe

            checks = verify_checks(store_connection(store_url))
            where = describe(store_url)
        else:
            path = resolve_db(db_path)
            checks = run_checks(open_db(path, "check").db)  # a -wal a kill -9 left stays as it is
            where = str(path)
        failed = [c for c in checks if not c.ok]
        if as_json:
            emit_json({"ok": not failed, "database": where, "checks": [c.to_json() for c in checks]})
        else:
            width = shutil.get_terminal_size().columns
            for c in checks:
                mark = "ok  " if c.ok else "FAIL"
                lines = hang(f"{mark}  {c.name}: ", c.details[0] if c.details else "", width)
                for extra in c.details[1:]:
                    lines += hang("      ", extra, width)
                click.echo("\n".join(lines))
        if failed:
            raise CheckFailed("verify failed: " + ", ".join(c.name for c in failed))
