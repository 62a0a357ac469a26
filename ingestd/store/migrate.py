"""Applying the migration ledger (the shell around ``ingestd.core.ledger.plan``).

Each pending migration runs in its own ``BEGIN IMMEDIATE`` transaction together
with its ``schema_version`` row. Any problem found by the plan stops everything
before anything is applied.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from ingestd.core import ledger
from ingestd.core.timefmt import from_epoch_ns
from ingestd.errors import MigrationError
from ingestd.store.connection import Db, register_functions, storage_errors, write_txn

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


def files_on_disk(directory: Path = MIGRATIONS_DIR) -> list[ledger.FileOnDisk]:
    """Every ``NNNN_name.sql`` file in ``directory`` with its SHA-256. Read-only."""
    out = []
    for p in sorted(directory.iterdir()):
        m = _NAME.match(p.name)
        if m:
            out.append(ledger.FileOnDisk(int(m.group(1)), m.group(2), hashlib.sha256(p.read_bytes()).hexdigest()))
    return out


def _ensure_ledger(conn: Db) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        " id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL, checksum TEXT)"
    )
    cols = [r[1] for r in conn.execute("PRAGMA table_info(schema_version)")]
    if "checksum" not in cols:
        # A ledger that predates checksums: add the column; plan() fills it once.
        conn.execute("ALTER TABLE schema_version ADD COLUMN checksum TEXT")


def applied(conn: Db) -> list[ledger.Applied]:
    """The ledger rows (empty when there is no ledger). Read-only."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'").fetchall()
    if not exists:
        return []
    cols = [r[1] for r in conn.execute("PRAGMA table_info(schema_version)")]
    sel = "checksum" if "checksum" in cols else "NULL"
    return [
        ledger.Applied(r[0], r[1], r[2])
        for r in conn.execute(f"SELECT id, name, {sel} FROM schema_version ORDER BY id")
    ]


@dataclass(frozen=True, slots=True)
class Status:
    """Ledger status: ``applied`` rows and ``pending`` pins, plus any ``problems``."""

    applied: list[ledger.Applied]
    pending: tuple[ledger.Pin, ...]
    problems: tuple[str, ...]


def status(conn: Db, directory: Path = MIGRATIONS_DIR) -> Status:
    """What ``migrate`` would do. Read-only."""
    with storage_errors():
        rows = applied(conn)
    p = ledger.plan(files_on_disk(directory), rows)
    return Status(rows, p.pending, p.problems)


def migrate(
    conn: Db,
    *,
    directory: Path = MIGRATIONS_DIR,
    pins: tuple[ledger.Pin, ...] = ledger.PINS,
    now: str | None = None,
    applying: Callable[[ledger.Pin], AbstractContextManager[object]] | None = None,
) -> list[ledger.Pin]:
    """Apply every pending migration.

    Args:
        conn: a connection from ``connect``.
        directory: where the ``.sql`` files are.
        pins: the pinned ledger.
        now: canonical UTC ``applied_at``; the clock when None.
        applying: each pending migration is applied inside ``applying(pin)`` (one that rewrites a
            large table takes seconds: a command shows which while it runs).

    Returns:
        The pins applied by this run (empty when nothing was pending).

    Raises:
        MigrationError: a file or a recorded checksum does not match its pin (nothing applied),
            or a migration failed (its transaction rolled back, no ledger row).
    """
    stamp = now or from_epoch_ns(time.time_ns())
    with storage_errors():
        rows = applied(conn)
        register_functions(conn)  # a connection opened without the policy has them too
    p = ledger.plan(files_on_disk(directory), rows, pins)
    if p.problems:
        raise MigrationError("; ".join(p.problems), problems=p.problems)
    if p.fill_checksums:
        write_txn(conn, lambda c: _fill_checksums(c, p.fill_checksums))
    done: list[ledger.Pin] = []
    for pin in p.pending:
        with nullcontext() if applying is None else applying(pin):
            if _apply_one(conn, directory, pin, stamp):
                done.append(pin)
    return done


def _fill_checksums(c: Db, pins: tuple[ledger.Pin, ...]) -> None:
    """Record the pinned checksum of ledger rows written before checksums existed (NULL ones)."""
    _ensure_ledger(c)
    for pin in pins:
        c.execute("UPDATE schema_version SET checksum = ? WHERE id = ? AND checksum IS NULL", (pin.sha256, pin.id))


def _apply_one(conn: Db, directory: Path, pin: ledger.Pin, stamp: str) -> bool:
    """Run migration ``pin`` and its ledger row in one transaction; False when another process
    applied it meanwhile.

    Raises:
        MigrationError: it failed (rolled back, no ledger row), or was recorded meanwhile otherwise.
    """
    sql = (directory / f"{pin.stem}.sql").read_text(encoding="utf-8")

    def step(c: Db) -> bool:
        _ensure_ledger(c)
        if _applied_meanwhile(c, pin):
            return False
        c.execute(sql)
        c.execute(
            "INSERT INTO schema_version (id, name, applied_at, checksum) VALUES (?, ?, ?, ?)",
            (pin.id, pin.name, stamp, pin.sha256),
        )
        return True

    try:
        return write_txn(conn, step)
    except MigrationError:
        raise
    except Exception as e:
        raise MigrationError(f"migration {pin.stem} failed and was rolled back: {e}", migration=pin.id) from e


def _applied_meanwhile(c: Db, pin: ledger.Pin) -> bool:
    """Whether another process applied ``pin`` since the plan was made (read under the write lock).

    ``ingestd serve`` and ``ingestd ingest`` started together on a new database both plan every
    migration; the second one's transaction then waits for the first's, and must find the work done
    instead of running it again (it failed with "table events_raw already exists").

    Raises:
        MigrationError: the row recorded for ``pin`` has another name or checksum.
    """
    rows = c.execute("SELECT name, checksum FROM schema_version WHERE id = ?", (pin.id,)).fetchall()
    if not rows:
        return False
    name, checksum = rows[0]
    if name != pin.name or checksum != pin.sha256:
        raise MigrationError(
            f"migration {pin.stem} was recorded meanwhile as {name!r} with checksum {checksum!r}", migration=pin.id
        )
    return True
