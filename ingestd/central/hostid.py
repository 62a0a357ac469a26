"""``ingestd ship --set-host-id NAME``: give this database its own host id (team mode, SPEC §13).

Two machines with the same host name cannot both ship to one central store: the store keys a
host's rows by ``host_id``, and the second database is refused. ``meta.host_id`` is chosen once,
when the database is first used, and every ``orchestration_edges`` row this database projected
carries it (SPEC §4.3), so editing ``meta`` alone made ``ingestd replay`` fail ("replay mismatch
in orchestration_edges"): the edges are re-stamped here in the same transaction.

Refused while a daemon serves the database (it keeps the identity it started with) and once the
database has shipped rows (they are in a central store under the old id; a new one would ship them
again as another host's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from ingestd.errors import ConfigError
from ingestd.store.connection import write_txn
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


def set_host_id(conn: apsw.Connection, name: str) -> HostIdChange:
    """Set ``meta.host_id`` to ``name`` and re-stamp this database's edges with it, in one transaction.

    Args:
        conn: a migrated write connection, not inside a transaction (no daemon serving it).
        name: the new host id (``check_host_id``).

    Returns:
        ``HostIdChange``; ``edges`` is 0 and nothing is written when ``name`` is already the id.

    Raises:
        ConfigError: ``name`` cannot be a host id, or the database has shipped rows (``meta.shipped_through``).
    """
    check_host_id(name)

    def change(c: apsw.Connection) -> HostIdChange:
        old = identity_in_txn(c).host_id
        if old == name:
            return HostIdChange(old, name, 0)
        through = shipped_through(c)
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
