"""The central store (team mode, SPEC §13) for the commands: its ``--store`` option and its connections."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ingestd.errors import ConfigError, MigrationError

F = TypeVar("F", bound=Callable[..., Any])


def store_flag(help: str) -> Callable[[F], F]:
    """The ``--store URL`` option (env ``INGESTD_STORE``, into ``store_url``) with ``help``: what
    the command does with the central store."""
    return click.option("--store", "store_url", default=None, envvar="INGESTD_STORE", metavar="URL", help=help)


def store_option(f: F) -> F:
    """``--store URL``: read the central PostgreSQL store (team mode, SPEC §13) instead of ``--db``."""
    return store_flag(
        "Read the central PostgreSQL store (team mode) instead of the local database; the URL holds no "
        "password (libpq's ~/.pgpass or PG* environment supply it) [env INGESTD_STORE]."
    )(f)


def store_connection(url: str, *, autocommit: bool = False) -> Any:
    """A psycopg connection to the central store, closed when the command ends (``ingestd.central.pg.connect``)."""
    from ingestd.central.pg import connect

    pg = connect(url, autocommit=autocommit)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(pg.close)
    return pg


def open_store(url: str) -> Any:
    """A read connection to a migrated central store, as ``PgReadConn`` (the reports' connection shape).

    Raises:
        ConfigError: the URL is unusable, or the store has no schema yet / needs migrations.
        MigrationError: the central ledger refuses.
        StorageError: the server cannot be reached.
    """
    from ingestd.central import migrate as central_migrate
    from ingestd.central.pg import PgReadConn, describe

    pg = store_connection(url, autocommit=True)
    plan = central_migrate.status(pg)
    if plan.problems:
        raise MigrationError("central store: " + "; ".join(plan.problems), problems=plan.problems)
    if plan.pending:
        raise ConfigError(
            f"the central store {describe(url)} is not set up or needs migrations: run "
            "`ingestd ship --to URL` or `ingestd project --store URL` first"
        )
    return PgReadConn(pg)
