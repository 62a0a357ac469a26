"""``ingestd ship --set-host-id NAME``: give this database its own host id (team mode, SPEC §13).

Two machines with the same host name cannot both ship to one central store: the store keys a
host's rows by ``host_id``, and the second database is refused. ``meta.host_id`` is chosen once,
when the database is first used, and every ``orchestration_edges`` row this database projected
carries it (SPEC §4.3), so editing ``meta`` alone made ``ingestd replay`` fail ("replay mismatch
in orchestration_edges"): the edges are re-stamped here in the same transaction.

Refused while a daemon serves the database (it keeps the identity it started with) and once the
database has shipped rows (they are in a central store under the old id; a new one would ship them
again as another host's), unless the store refused it as a copy of another database shipping as
that host (``meta.ship_refused``, ``ingestd.central.copies``): then the copy also gets a new
instance, and ships its whole log again under the new id (nothing of it is lost; what the two
copies share is then in the store under both ids).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from ingestd.errors import ConfigError
from ingestd.store.connection import Db, write_txn
from ingestd.store.identity import identity_in_txn, shipped_through

MAX_HOST_ID = 200


@dataclass(frozen=True, slots=True)
class HostIdChange:
    """What ``set_host_id`` did.

    Attributes:
        old: str, the host id before.
        new: str, the host id now.
        edges: int, ``orchestration_edges`` rows re-stamped with it.
    """

    old: str
    new: str
    edges: int

    def to_json(self) -> dict[str, Any]:
        """``{"old", "new", "edges"}``."""
        return {"old": self.old, "new": self.new, "edges": self.edges}


def check_host_id(name: str) -> str:
    """``name`` when it can be a host id: 1..200 printable characters, no white space around them.

    Raises:
        ConfigError: it cannot.
    """
    if not name or name != name.strip() or not name.isprintable() or len(name) > MAX_HOST_ID:
        raise ConfigError(
            f"host id {name!r}: give 1-{MAX_HOST_ID} printable characters with no white space around them",
            host_id=name,
        )
    return name


def set_host_id(conn: Db, name: str) -> HostIdChange:
    """Set ``meta.host_id`` to ``name`` and re-stamp this database's edges with it, in one transaction.

    Args:
        conn: a migrated write connection, not inside a transaction (no daemon serving it).
        name: the new host id (``check_host_id``).

    Returns:
        ``HostIdChange``; ``edges`` is 0 and nothing is written when ``name`` is already the id.

    Raises:
        ConfigError: ``name`` cannot be a host id, or the database has shipped rows (``meta.shipped_through``)
            and the store has not refused it as a copy (``meta.ship_refused``: then it gets a new
            instance too, and nothing counts as shipped under ``name``).
    """
    check_host_id(name)

    def change(c: Db) -> HostIdChange:
        old = identity_in_txn(c).host_id
        if old == name:
            return HostIdChange(old, name, 0)
        through = shipped_through(c)
        if _refused_copy(c, old):
            return _new_identity(c, old, name)
        if through > 0:
            raise ConfigError(
                f"this database has shipped its log through local id {through} as host {old!r}: those rows"
                " are in a central store under that id, and a new id would ship them again as another host's;"
                " nothing was changed",
                host_id=old,
            )
        c.execute("UPDATE meta SET value = ? WHERE key = 'host_id'", (name,))
        c.execute("UPDATE orchestration_edges SET host_id = ? WHERE host_id = ?", (name, old))
        return HostIdChange(old, name, c.changes())

    return write_txn(conn, change)


def _refused_copy(c: Db, host_id: str) -> bool:
    """Whether the store refused this database as a second copy shipping as ``host_id``. Read-only."""
    return bool(c.execute("SELECT 1 FROM meta WHERE key = 'ship_refused' AND value = ?", (host_id,)).fetchall())


def _new_identity(c: Db, old: str, name: str) -> HostIdChange:
    """A refused copy becomes a host of its own: ``name`` and a new instance, its edges re-stamped with
    both (``replay`` stamps them from ``meta``), nothing shipped under ``name`` yet (so ``prune``
    keeps every row until it has travelled again). In the caller's transaction."""
    instance = uuid.uuid4().hex
    c.execute("UPDATE meta SET value = ? WHERE key = 'host_id'", (name,))
    c.execute("UPDATE meta SET value = ? WHERE key = 'instance'", (instance,))
    c.execute("DELETE FROM meta WHERE key IN ('shipped_through', 'ship_refused')")
    c.execute("UPDATE orchestration_edges SET host_id = ?, instance = ? WHERE host_id = ?", (name, instance, old))
    return HostIdChange(old, name, c.changes())
