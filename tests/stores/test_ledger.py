"""The checksummed migration ledger (SPEC §6; ``ingestd.store.migrate`` and ``ingestd.central.migrate``,
both planned by ``ingestd.core.ledger.plan``): each pinned migration is applied once, and a
migration file or a recorded checksum that differs from its pin is refused before anything runs."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ingestd.central import migrate as central_migrate
from ingestd.core import ledger
from ingestd.errors import MigrationError
from ingestd.store import migrate as local_migrate
from ingestd.store.connection import connect


@dataclass
class Ledger:
    """One store's ledger: its migrations, pins and connection (not migrated yet)."""

    conn: Any
    module: Any  # ingestd.store.migrate | ingestd.central.migrate
    directory: Path
    pins: tuple[ledger.Pin, ...]
    first: str  # the first migration's stem

    def migrate(self, directory: Path | None = None) -> list[int]:
        return [p.id for p in self.module.migrate(self.conn, directory=directory or self.directory)]

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        rows = [tuple(r) for r in self.conn.execute(sql)]
        if isinstance(self.conn, psycopg.Connection):
            self.conn.commit()
        return rows

    def schema(self) -> list[tuple[Any, ...]]:
        """Every table, index and trigger with its definition."""
        if isinstance(self.conn, psycopg.Connection):
            return self.rows(
                "SELECT 'table', table_name, column_name || ' ' || data_type FROM information_schema.columns"
                " WHERE table_schema = 'public' UNION ALL SELECT 'index', indexname, indexdef FROM pg_indexes"
                " WHERE schemaname = 'public' UNION ALL SELECT 'trigger', tgname, tgrelid::regclass::text"
                " FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2, 3"
            )
        return self.rows("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")

    def has_table(self, name: str) -> bool:
        if isinstance(self.conn, psycopg.Connection):
            return self.rows(f"SELECT to_regclass('{name}') IS NOT NULL")[0][0] is True
        return bool(self.rows(f"SELECT 1 FROM sqlite_master WHERE name = '{name}'"))


@pytest.fixture(params=["sqlite", "postgresql"])
def store_ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    """A new, empty database of each kind and its store's migrations."""
    if request.param == "sqlite":
        conn: Any = connect(tmp_path / "new.db")
        yield Ledger(conn, local_migrate, local_migrate.MIGRATIONS_DIR, ledger.PINS, ledger.PINS[0].stem)
    else:
        conn = psycopg.connect(request.getfixturevalue("pg_url"))
        pins = ledger.PG_PINS
        yield Ledger(conn, central_migrate, central_migrate.PG_MIGRATIONS_DIR, pins, pins[0].stem)
    conn.close()


def test_each_pin_is_applied_once_and_a_second_run_changes_nothing(store_ledger: Ledger) -> None:
    assert store_ledger.migrate() == [p.id for p in store_ledger.pins]
    before = store_ledger.schema()
    assert store_ledger.migrate() == []
    assert store_ledger.schema() == before
    assert store_ledger.rows("SELECT id, checksum FROM schema_version ORDER BY id") == [
        (p.id, p.sha256) for p in store_ledger.pins
    ]


def test_an_edited_migration_file_is_refused_naming_it_and_nothing_runs(store_ledger: Ledger, tmp_path: Path) -> None:
    d = tmp_path / "migrations"
    shutil.copytree(store_ledger.directory, d)
    edited = store_ledger.pins[1].stem
    target = d / f"{edited}.sql"
    target.write_text(target.read_text() + "\n-- a quiet edit\n")
    with pytest.raises(MigrationError, match=rf"{edited}\.sql was edited after release.*new migration"):
        store_ledger.migrate(d)
    # nothing ran: not even the untouched first migration
    assert not store_ledger.has_table("events_raw")


def test_a_tampered_recorded_checksum_is_refused(store_ledger: Ledger) -> None:
    store_ledger.migrate()
    store_ledger.conn.execute("UPDATE schema_version SET checksum = 'deadbeef' WHERE id = 1")
    if isinstance(store_ledger.conn, psycopg.Connection):
        store_ledger.conn.commit()
    with pytest.raises(MigrationError, match=rf"applied migration {store_ledger.first} has recorded checksum"):
        store_ledger.migrate()
