"""The two projection stores behind one face, for the contract suite (``tests/stores/test_*.py``).

Every rule the local SQLite store and the central PostgreSQL store both implement is written once,
against ``Store``, and run against each (pyeventsourcing/eventsourcing's ``tests/persistence.py``,
run by its ``test_sqlite.py`` and ``test_postgres.py``). The adapters reach each store through its
own write path, never a model of it:

- ``log``: local, ``store.writer.apply_batch`` (one write transaction); central, the rows are
  written to a host's own local database, shipped (``central.ship.ship``) and folded
  (``central.project.project_store``): one slice per call, as a team's daemon ships and projects.
- ``write``: a projector's rows upserted by the store's ``write_changes``.
- ``watchdog``: local, ``store.watchdog_pass.watchdog_pass``; central, ``central.project.watchdog``
  with ``as_of`` and the window as the hosts' row records them.
- ``rows`` / ``execute``: SQL in SQLite's dialect (``?`` placeholders), read through
  ``central.pg.PgReadConn``'s translation on PostgreSQL.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import apsw
import psycopg

from ingestd.central import check as central_check
from ingestd.central import project as central_project
from ingestd.central.pg import PgReadConn, to_pg
from ingestd.central.ship import ship
from ingestd.core.derive import Changes
from ingestd.core.records import NewLogRow
from ingestd.core.touch import Ctx
from ingestd.projection.dump import TABLES, canonical_rows
from ingestd.projection.rebuild import rebuild_projections
from ingestd.store import rollup, upsert, watchdog_pass
from ingestd.store.connection import connect, write_txn
from ingestd.store.identity import database_identity
from ingestd.store.migrate import migrate
from ingestd.store.writer import apply_batch

HOST = "host-a"


class Refused(Exception):
    """The store refused a statement (a constraint, a guard trigger, the append-only log)."""


class Store(Protocol):
    """What the contract suite asks of a projection store."""

    kind: str  # "sqlite" | "postgresql"

    def log(self, rows: Sequence[NewLogRow], *, host: str = HOST) -> None:
        """Append log rows and project them (one write transaction, or one ship and one slice)."""

    def write(self, ch: Changes, *, sid: str, host: str = HOST) -> None:
        """Upsert a projector's rows of session ``sid`` in one transaction."""

    def watchdog(self, as_of: str, window_s: int) -> int:
        """One watchdog pass at ``as_of`` with ``window_s``; returns the agents moved to unknown."""

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A read in SQLite's dialect."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement in SQLite's dialect, in a savepoint. Raises ``Refused`` (nothing changed)."""

    def columns(self, table: str) -> tuple[set[str], set[str]]:
        """(every column, the required ones: NOT NULL without a default, not generated) of ``table``."""

    def usage_columns(self) -> dict[str, Any]:
        """Columns a direct ``token_usage`` insert must add in this store (its host)."""

    def rewrites(self, table: str, fn: Callable[[], None]) -> int:
        """How many of ``table``'s rows ``fn`` wrote (a row rewritten with equal values counts)."""

    def rollup_differences(self) -> list[str]:
        """Where the rollup and the grouped scan of ``token_usage`` differ (empty when equal)."""

    def replay_differs(self) -> list[str]:
        """The projection tables a rebuild from the log gives otherwise than the live ones hold."""

    def scratch(self) -> contextlib.AbstractContextManager[None]:
        """A transaction whose writes are all rolled back at its end."""

    @property
    def reader(self) -> Any:
        """A connection the report functions read (``report.cost.cost_report`` and the others)."""


class SqliteStore:
    """The local store: one migrated database file."""

    kind = "sqlite"

    def __init__(self, conn: apsw.Connection, workdir: Path) -> None:
        """``conn``: a migrated database; ``workdir``: where rebuilds are written."""
        self.conn = conn
        self.ctx = database_identity(self.conn, hostname=HOST)
        self._dir = workdir

    def log(self, rows: Sequence[NewLogRow], *, host: str = HOST) -> None:
        assert host == HOST, "a local database is one host"
        apply_batch(self.conn, list(rows), ctx=self.ctx)

    def write(self, ch: Changes, *, sid: str, host: str = HOST) -> None:
        write_txn(self.conn, lambda c: upsert.write_changes(c, ch))

    def watchdog(self, as_of: str, window_s: int) -> int:
        return write_txn(self.conn, lambda c: watchdog_pass.watchdog_pass(c, as_of, window_s))

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.conn.execute(sql, tuple(params))]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        try:
            with self.conn:  # a savepoint inside a scratch transaction
                self.conn.execute(sql, tuple(params))
        except apsw.ConstraintError as e:
            raise Refused(str(e)) from e

    def columns(self, table: str) -> tuple[set[str], set[str]]:
        info = list(self.conn.execute(f"PRAGMA table_info({table})"))
        # NOT NULL, no default, not the rowid alias (an INTEGER PRIMARY KEY takes the next rowid)
        required = {str(r[1]) for r in info if r[3] and r[4] is None and not (r[5] and r[2].upper() == "INTEGER")}
        return {str(r[1]) for r in info}, required

    def usage_columns(self) -> dict[str, Any]:
        return {}

    def rewrites(self, table: str, fn: Callable[[], None]) -> int:
        # temp triggers count the table's own writes (total_changes counts every table's)
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS written (n INTEGER)")
        self.conn.execute("DELETE FROM temp.written")
        for op in ("INSERT", "UPDATE"):
            self.conn.execute(
                f"CREATE TEMP TRIGGER IF NOT EXISTS count_{op.lower()}_{table} AFTER {op} ON main.{table}"
                " BEGIN INSERT INTO temp.written VALUES (1); END"
            )
        try:
            fn()
            return int(self.conn.execute("SELECT count(*) FROM temp.written").fetchall()[0][0])
        finally:
            for op in ("insert", "update"):
                self.conn.execute(f"DROP TRIGGER temp.count_{op}_{table}")

    def rollup_differences(self) -> list[str]:
        return rollup.differences(self.conn)

    def replay_differs(self) -> list[str]:
        n = sum(1 for _ in self._dir.glob("rebuild-*.db"))
        dst = connect(self._dir / f"rebuild-{n}.db")
        try:
            migrate(dst)
            rebuild_projections(self.conn, dst, batch_size=1, origin_order="reverse", ctx=self.ctx)
            return [t for t, _ in TABLES if canonical_rows(self.conn, t) != canonical_rows(dst, t)]
        finally:
            dst.close()

    @contextlib.contextmanager
    def scratch(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            self.conn.execute("ROLLBACK")

    @property
    def reader(self) -> Any:
        return self.conn

    def close(self) -> None:
        self.conn.close()


class PostgresStore:
    """The central store: one migrated database of the test run's cluster, and each host's local
    database that ships to it."""

    kind = "postgresql"

    def __init__(self, url: str, tmp: Path, local_template: Path) -> None:
        self.url = url
        self._template = local_template
        self.pg = psycopg.connect(url)  # the writer (ship, project, write), transactions of its own
        self.read = PgReadConn(psycopg.connect(url, autocommit=True))
        self._tmp = tmp
        self._hosts: dict[str, tuple[apsw.Connection, Ctx]] = {}
        self._in_scratch = False

    def _host(self, host: str) -> tuple[apsw.Connection, Ctx]:
        if host not in self._hosts:
            shutil.copy(self._template, self._tmp / f"{host}.db")
            conn = connect(self._tmp / f"{host}.db")
            self._hosts[host] = (conn, database_identity(conn, hostname=host))
        return self._hosts[host]

    def log(self, rows: Sequence[NewLogRow], *, host: str = HOST) -> None:
        local, ctx = self._host(host)
        apply_batch(local, list(rows), ctx=ctx)
        ship(local, self.pg)
        central_project.project_store(self.pg)

    def write(self, ch: Changes, *, sid: str, host: str = HOST) -> None:
        with self.pg.transaction():
            central_project.write_changes(self.pg, sid, host, ch)
            self.pg.execute("INSERT INTO hosts (host_id, instance) VALUES (%s, 'i') ON CONFLICT DO NOTHING", (host,))
            self.pg.execute(
                "INSERT INTO session_hosts (session_id, host_id) VALUES (%s, %s) ON CONFLICT DO NOTHING", (sid, host)
            )

    def watchdog(self, as_of: str, window_s: int) -> int:
        with self.pg.transaction():
            self.pg.execute("UPDATE hosts SET log_as_of = %s, watchdog_window_s = %s", (as_of, window_s))
            return central_project.watchdog(self.pg)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self._in_scratch:  # the writer's own uncommitted rows
            return [tuple(r) for r in PgReadConn(self.pg).execute(sql, tuple(params) or None)]
        return [tuple(r) for r in self.read.execute(sql, tuple(params) or None)]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        try:
            with self.pg.transaction():
                self.pg.execute(to_pg(sql, bool(params)), tuple(params) or None)
        except (psycopg.errors.IntegrityError, psycopg.errors.RaiseException) as e:
            raise Refused(str(e)) from e

    def columns(self, table: str) -> tuple[set[str], set[str]]:
        info = self.read.execute(
            "SELECT column_name, is_nullable, column_default, is_identity FROM information_schema.columns"
            " WHERE table_schema = 'public' AND table_name = ?",
            (table,),
        )
        required = {str(r[0]) for r in info if r[1] == "NO" and r[2] is None and r[3] == "NO"}
        return {str(r[0]) for r in info}, required

    def usage_columns(self) -> dict[str, Any]:
        return {"host_id": HOST}

    def rewrites(self, table: str, fn: Callable[[], None]) -> int:
        # a row rewritten gets a new version (xmin), even with equal values
        q = f"SELECT ctid::text, xmin::text FROM {table}"
        before = set(self.read.execute(q))
        fn()
        return len(set(self.read.execute(q)) - before)

    def rollup_differences(self) -> list[str]:
        return central_check.rollup_differences(self.pg)

    def replay_differs(self) -> list[str]:
        out = central_check.replay(self.pg)
        return sorted(set(out.differing))

    @contextlib.contextmanager
    def scratch(self) -> Iterator[None]:
        with self.pg.transaction(force_rollback=True):
            self._in_scratch = True
            try:
                yield
            finally:
                self._in_scratch = False

    @property
    def reader(self) -> Any:
        return self.read

    def close(self) -> None:
        for conn, _ in self._hosts.values():
            conn.close()
        self.read.close()
        self.pg.close()
