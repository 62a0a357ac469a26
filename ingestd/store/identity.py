"""The database's identity: which ingestd instance on which host produced its log.

Edges carry ``(instance, host_id)`` (SPEC §4.3). They must be the same whichever
command projects a row (``ingest``, ``serve``) and whatever rebuilds it (``replay``),
so they are chosen once, when the database is first used, and kept in ``meta``.
"""

from __future__ import annotations

import socket
import uuid

from ingestd.core.touch import Ctx
from ingestd.store.connection import Db, write_txn


def stored_identity(conn: Db) -> dict[str, str]:
    """The ``meta`` keys ``instance`` and ``host_id`` that are present, by key. Read-only."""
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta WHERE key IN ('instance', 'host_id')")}


def default_host_id(hostname: str | None = None) -> str:
    """The host id a database's first writer stores: ``hostname``, else this machine's name. Pure but
    for the name lookup."""
    return hostname or socket.gethostname()


def identity_in_txn(conn: Db, *, hostname: str | None = None) -> Ctx:
    """``database_identity`` for a caller already inside a write transaction.

    Side effects:
        On first use, inserts the two ``meta`` keys (no transaction of its own).
    """
    rows = stored_identity(conn)
    if "instance" not in rows or "host_id" not in rows:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('instance', ?), ('host_id', ?) ON CONFLICT (key) DO NOTHING",
            (uuid.uuid4().hex, default_host_id(hostname)),
        )
        rows = stored_identity(conn)
    return Ctx(instance=rows["instance"], host_id=rows["host_id"])


def host_id_of(conn: Db) -> str:
    """The database's host id, or the one its first writer will store (this machine's name). Read-only."""
    return stored_identity(conn).get("host_id") or default_host_id()


def database_identity(conn: Db, *, hostname: str | None = None) -> Ctx:
    """The projector context of this database; created (and stored) on first use.

    Args:
        conn: a migrated write connection, not inside a transaction.
        hostname: the host name to record on first use (default: this machine's).

    Returns:
        ``Ctx(instance, host_id)`` from ``meta`` keys ``instance`` and ``host_id``.

    Side effects:
        On first use, writes both keys in one transaction (a concurrent first use by
        another process keeps whichever committed first).
    """
    rows = stored_identity(conn)
    if "instance" in rows and "host_id" in rows:
        return Ctx(instance=rows["instance"], host_id=rows["host_id"])
    return write_txn(conn, lambda c: identity_in_txn(c, hostname=hostname))


def shipped_through(conn: Db) -> int:
    """``meta.shipped_through``: every local log row with ``id <=`` it is in the central store (team
    mode, SPEC §13; written by ``ingestd.central.ship`` after each committed batch). 0: none. Read-only."""
    for (v,) in conn.execute("SELECT value FROM meta WHERE key = 'shipped_through'"):
        return int(v) if isinstance(v, str) and v.isdigit() else 0
    return 0
