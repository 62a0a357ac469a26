"""The central store's migration ledger (SPEC §13, the rules of SPEC §6).

PostgreSQL-dialect files in ``migrations/pg/``, pinned in ``ingestd.core.ledger.PG_PINS`` and
planned by the same pure ``ledger.plan``: an edited file or a recorded checksum that no longer
matches refuses everything before anything runs. Each pending migration runs in its own
transaction together with its ``schema_version`` row; a transaction-scoped advisory lock makes
two machines migrating the same store at once apply each migration once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from ingestd.core import ledger
from ingestd.errors import MigrationError
from ingestd.store.migrate import MIGRATIONS_DIR, files_on_disk

PG_MIGRATIONS_DIR = MIGRATIONS_DIR / "pg"
# pg_advisory_xact_lock keys (arbitrary constants, one per kind of work).
MIGRATE_LOCK = 0x696E6765_7374_01
LEDGER_DDL = (
    "CREATE TABLE IF NOT EXISTS schema_version ("
    " id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), checksum text)"
)


def applied(conn: psycopg.Connection[Any]) -> list[ledger.Applied]:
    """The central ledger's rows (empty when there is no ledger). Read-only."""
    exists = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return []
    return [
        ledger.Applied(int(r[0]), str(r[1]), r[2])
        for r in conn.execute("SELECT id, name, checksum FROM schema_version ORDER BY id")
    ]


def status(
    conn: psycopg.Connection[Any], directory: Path = PG_MIGRATIONS_DIR, pins: tuple[ledger.Pin, ...] = ledger.PG_PINS
) -> ledger.Plan:
    """What ``migrate`` would do on the central store. Read-only."""
    return ledger.plan(files_on_disk(directory), applied(conn), pins)


def migrate(
    conn: psycopg.Connection[Any],
    *,
    directory: Path = PG_MIGRATIONS_DIR,
    pins: tuple[ledger.Pin, ...] = ledger.PG_PINS,
) -> list[ledger.Pin]:
    """Apply every pending central migration.

    Args:
        conn: a connection from ``ingestd.central.pg.connect`` (not in autocommit mode).
        directory: where the ``.sql`` files are.
        pins: the pinned ledger.

    Returns:
        The pins applied by this run (empty when nothing was pending).

    Raises:
        MigrationError: a file or a recorded checksum does not match its pin (nothing applied),
            or a migration failed (its transaction rolled back, no ledger row).
    """
    files = files_on_disk(directory)
    done: list[ledger.Pin] = []
    while True:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            p = ledger.plan(files, applied(conn), pins)
            if p.problems:
                raise MigrationError("central store: " + "; ".join(p.problems), problems=p.problems)
            if not p.pending:
                return done
            pin = p.pending[0]
            sql = (directory / f"{pin.stem}.sql").read_text(encoding="utf-8")
            try:
                with conn.transaction():
                    conn.execute(LEDGER_DDL)
                    conn.execute(sql.encode("utf-8"))
                    conn.execute(
                        "INSERT INTO schema_version (id, name, checksum) VALUES (%s, %s, %s)",
                        (pin.id, pin.name, pin.sha256),
                    )
            except psycopg.Error as e:
                first = str(e).strip().splitlines()[0] if str(e) else type(e).__name__
                raise MigrationError(
                    f"central migration pg/{pin.stem} failed and was rolled back: {first}", migration=pin.id
                ) from e
            done.append(pin)
