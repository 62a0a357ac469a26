"""One database shipping as two: a copy of a local database on a second machine (SPEC §13).

Both copies hold the same ``meta.host_id`` and ``meta.instance``, so the store cannot tell them
apart by name, only by their logs: after the copy, each appends rows of its own under the same local
ids. When a ship finds that the row at the host's mark is not its own, either its database was
restored from a backup (it is taken: the log is shipped again, keys the store has are skipped) or it
is one of two copies. The mark left behind is kept (``hosts.abandoned_through`` / ``abandoned_key``,
pg migration 0004): a database that holds that very row is the copy that shipped it, still alive,
and is refused (``SecondCopy``) with the fix, instead of taking the mark back and re-sending its
whole log on every ship, both copies showing as one host. A restored database never holds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ingestd.central.pg import pg_errors
from ingestd.errors import ConfigError
from ingestd.store.connection import Db, set_meta


class SecondCopy(ConfigError):
    """Another database ships as this host id and the two logs have diverged (a copied database)."""


def diverged(
    pg: psycopg.Connection[Any], host_id: str, host: Sequence[Any], key_at_abandoned: str | None, where: str
) -> None:
    """Record a divergence of ``host_id``'s log in the caller's transaction, or refuse the other copy.

    Args:
        pg: the store connection, inside the ship's transaction (the host row locked).
        host: the host row: ``(shipped_through, shipped_key, abandoned_through, abandoned_key)``.
        key_at_abandoned: the local key at ``abandoned_through`` (None: no such row, or none kept).
        where: the local database's path, for the message.

    Raises:
        SecondCopy: the local database holds the mark left behind at an earlier divergence.
    """
    if host[2] is not None and key_at_abandoned is not None and key_at_abandoned == host[3]:
        raise SecondCopy(
            f"the central store refused {where or 'this database'} as host {host_id!r}: another database ships"
            " as that host and the two logs have diverged (one database copied to two machines?). Nothing"
            " of this one was shipped and nothing is lost. Give this copy its own identity: `ingestd ship"
            f" --set-host-id NAME --db {where or 'PATH'}` (a new host id and instance; its daemon stopped),"
            " then ship: its whole log goes under NAME",
            host_id=host_id,
        )
    pg.execute(
        "UPDATE hosts SET abandoned_through = %s, abandoned_key = %s, diverged_at = now() WHERE host_id = %s",
        (host[0], host[1], host_id),
    )


def refused(local: Db, pg: psycopg.Connection[Any], host_id: str) -> None:
    """After a ``SecondCopy``: say so in the store (``hosts.refused_at``, which ``status --store`` shows)
    and here (``meta.ship_refused``, which lets ``ship --set-host-id`` give this shipped database a
    new identity). Each in a transaction of its own."""
    with pg_errors(), pg.transaction():
        pg.execute("UPDATE hosts SET refused_at = now() WHERE host_id = %s", (host_id,))
    set_meta(local, "ship_refused", host_id)
