"""The contract suite's one fixture: ``store``, each test run against SQLite and against PostgreSQL."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from ingestd.central.migrate import migrate as migrate_central
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.pgcluster import Cluster
from tests.stores.stores import PostgresStore, SqliteStore, Store

_DB = "contract"
_SEED = "contract_seed"  # a copy of every table's rows as migrate left them (outside the store's schema)


def _tables(conn: psycopg.Connection[object]) -> list[str]:
    return [str(r[0]) for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]


@pytest.fixture(scope="session")
def _pg_contract(pg_cluster: Cluster) -> str:
    """The worker's central store for the suite, migrated once, with a copy of its first rows.

    A fresh database per test (CREATE DATABASE, 0.4-0.8 s here, more than most tests) is replaced by
    ``_reset``: every table emptied and its migrated rows put back."""
    with psycopg.connect(pg_cluster.url(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {_DB}")
    url = pg_cluster.url(_DB)
    with psycopg.connect(url) as conn:
        migrate_central(conn)
        conn.execute(f"CREATE SCHEMA {_SEED}")
        for t in _tables(conn):
            conn.execute(f"CREATE TABLE {_SEED}.{t} AS SELECT * FROM public.{t}")
    return url


def _reset(url: str) -> None:
    """The store as migrate left it: with triggers off (the log's append-only guard), every table
    emptied, its identities restarted and its migrated rows put back. (DELETE: TRUNCATE makes new
    files for every table and index, 0.4 s against 0.07.)"""
    with psycopg.connect(url) as conn:
        conn.execute("SET LOCAL session_replication_role = replica")
        tables = _tables(conn)
        for t in tables:
            conn.execute(f"DELETE FROM public.{t}")
        for (seq,) in conn.execute("SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'").fetchall():
            conn.execute(f"ALTER SEQUENCE public.{seq} RESTART")
        for t in tables:
            conn.execute(f"INSERT INTO public.{t} OVERRIDING SYSTEM VALUE SELECT * FROM {_SEED}.{t}")


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated local database each test's store is a copy of (migrating one commits every
    migration with synchronous=FULL: 0.4 s on a disk)."""
    path = tmp_path_factory.mktemp("contract") / "template.db"
    conn = connect(path)
    migrate(conn)
    conn.close()
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated, empty projection store of each kind."""
    s: SqliteStore | PostgresStore
    if request.param == "sqlite":
        shutil.copy(request.getfixturevalue("_sqlite_template"), tmp_path / "local.db")
        s = SqliteStore(connect(tmp_path / "local.db"), tmp_path)
    else:
        url = request.getfixturevalue("_pg_contract")
        _reset(url)
        s = PostgresStore(url, tmp_path, request.getfixturevalue("_sqlite_template"))
    try:
        yield s
    finally:
        s.close()
