"""``ingestd verify [--db PATH] [--json]``: integrity checks; exit 1 naming each failure."""

from __future__ import annotations

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
            for c in checks:
                mark = "ok  " if c.ok else "FAIL"
                click.echo(f"{mark}  {c.name}: {c.details[0] if c.details else ''}")
                for extra in c.details[1:]:
                    click.echo(f"      {extra}")
        if failed:
            raise CheckFailed("verify failed: " + ", ".join(c.name for c in failed))
