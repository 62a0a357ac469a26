"""PostgreSQL connections for team mode (SPEC §13), and the one place psycopg errors become ``IngestdError``\\ s.

The store is named by a libpq URL (``postgresql://user@host:5432/db?sslmode=verify-full``) or a
keyword string; anything libpq reads from its environment (``PGHOST``, ``PGUSER``, ``PGSSLMODE``,
``PGPASSFILE``, ...) or from ``~/.pgpass`` applies as usual, and TLS parameters pass through
untouched. A password inside the URL is refused: the URL travels in argv and settings, so the
password belongs in ``~/.pgpass`` or ``PGPASSWORD`` (read by libpq, never by ingestd).

``PgReadConn`` lets the report functions written for SQLite run against the central store: the
same SQL, with ``?`` placeholders and the two SQLite-only functions they use translated.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg import errors as pgerr
from psycopg.conninfo import conninfo_to_dict

from ingestd.errors import BusyError, ConfigError, IntegrityError, StorageError

APPLICATION_NAME = "ingestd"

# (psycopg exception class, ingestd error class), most specific first. Tested table-driven.
_ERROR_MAP: tuple[tuple[type[BaseException], type[StorageError]], ...] = (
    (pgerr.LockNotAvailable, BusyError),
    (pgerr.SerializationFailure, BusyError),
    (pgerr.DeadlockDetected, BusyError),
    (psycopg.IntegrityError, IntegrityError),
    (psycopg.Error, StorageError),
)


def translate(exc: BaseException) -> StorageError:
    """Map a psycopg exception to the ingestd error tree (the only such mapping).

    The message is the server's first line (it never carries the connection password: the URL
    holds none, see ``check_url``).
    """
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for cls, ours in _ERROR_MAP:
        if isinstance(exc, cls):
            return ours(f"central store error: {first}", cause=type(exc).__name__)
    return StorageError(f"central store error: {first}", cause=type(exc).__name__)


@contextlib.contextmanager
def pg_errors() -> Iterator[None]:
    """Context manager re-raising psycopg errors as ``StorageError`` (``raise ... from e``)."""
    try:
        yield
    except psycopg.Error as e:
        raise translate(e) from e


_SHAPE = "postgresql://user@host/db, or host=... dbname=..."
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def check_url(url: str) -> dict[str, str]:
    """Parse a store URL or keyword string; refuse one that carries a password.

    Args:
        url: ``postgresql://...`` / ``postgres://...`` or ``host=... dbname=...``.

    Returns:
        The libpq parameters it sets (without the environment's).

    Raises:
        ConfigError: a URL of another scheme (``mysql://``), not a libpq connection string, or
            one that holds a password.
    """
    if not url or not url.strip():
        raise ConfigError(f"give the central store as a PostgreSQL URL ({_SHAPE})")
    scheme = _SCHEME.match(url.strip())
    if scheme and scheme.group(1).lower() not in ("postgresql", "postgres"):
        # libpq would read it as a keyword string and answer `missing "=" after ...`
        raise ConfigError(
            f"{scheme.group(1)}:// is not a PostgreSQL URL: the central store is PostgreSQL ({_SHAPE})",
            scheme=scheme.group(1),
        )
    try:
        params = {str(k): str(v) for k, v in conninfo_to_dict(url).items()}
    except psycopg.ProgrammingError as e:
        raise ConfigError(
            f"not a PostgreSQL URL or connection string ({_SHAPE}): libpq says {str(e).splitlines()[0]}"
        ) from e
    if "password" in params:
        raise ConfigError(
            "the store URL holds a password: keep it out of argv, logs and settings; put it in ~/.pgpass "
            "(or PGPASSFILE / PGPASSWORD, which libpq reads) and give the URL without it"
        )
    return params


def describe(url: str) -> str:
    """A loggable name of the store: ``user@host:port/dbname`` from the URL (environment not read)."""
    p = check_url(url)
    host = p.get("host") or p.get("hostaddr") or "(libpq default host)"
    port = f":{p['port']}" if "port" in p else ""
    user = f"{p['user']}@" if "user" in p else ""
    return f"{user}{host}{port}/{p.get('dbname', '(default db)')}"


def connect(url: str, *, autocommit: bool = False) -> psycopg.Connection[Any]:
    """Open a connection to the central store.

    Args:
        url: see ``check_url``; libpq's environment and ``~/.pgpass`` fill in the rest.
        autocommit: psycopg's autocommit (reads use it; writers manage transactions).

    Raises:
        ConfigError: the URL is unusable (see ``check_url``).
        StorageError: the server cannot be reached or refused the login.
    """
    check_url(url)
    try:
        return psycopg.connect(url, autocommit=autocommit, application_name=APPLICATION_NAME)
    except psycopg.Error as e:
        raise StorageError(
            f"cannot connect to the central store {describe(url)}: {str(e).strip().splitlines()[0] if str(e) else e}"
        ) from e


_PLACEHOLDER = re.compile(r"\?\d*")


@functools.lru_cache(maxsize=512)
def to_pg(sql: str, with_params: bool) -> str:
    """SQLite report SQL in PostgreSQL's dialect. Pure.

    Outside string literals: ``?`` -> ``%s`` and a literal ``%`` doubled (when parameters are
    bound, psycopg reads both), ``char(31)`` -> ``chr(31)``, ``instr(`` -> ``strpos(``. Only the
    constructs the reports use; a literal (``'?'``, ``'last_backup%'``) is left as written.
    """
    parts = sql.split("'")
    for i in range(0, len(parts), 2):  # even parts are outside quotes ('' inside a literal splits evenly)
        p = parts[i]
        if with_params:
            p = _PLACEHOLDER.sub("%s", p.replace("%", "%%"))
        parts[i] = p.replace("char(31)", "chr(31)").replace("instr(", "strpos(")
    for i in range(1, len(parts), 2):
        if with_params:
            parts[i] = parts[i].replace("%", "%%")
    return "'".join(parts)


class Rows(list[tuple[Any, ...]]):
    """A fetched result: iterable like a cursor, with ``fetchall``."""

    def fetchall(self) -> list[tuple[Any, ...]]:
        """Every row."""
        return list(self)


class PgReadConn:
    """The subset of an apsw connection the report functions use, over a psycopg connection.

    Read-only by convention (the reports only SELECT); each ``execute`` fetches its rows at once
    and maps psycopg errors to ``StorageError``.
    """

    central = True  # the reports' dialect switch (``ingestd.report.cost.host_expr``)

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, sql: str, bindings: Sequence[Any] | None = None) -> Rows:
        """Run one statement; returns its rows (empty for a statement that returns none)."""
        params = tuple(bindings) if bindings else None
        with pg_errors():
            cur = self.conn.execute(to_pg(sql, params is not None), params)
            return Rows(cur.fetchall() if cur.description is not None else [])

    def close(self) -> None:
        """Close the underlying connection."""
        self.conn.close()
