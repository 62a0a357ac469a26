"""Which session a session was forked from, and which were forked from it (DESIGN.md "Forks"). Read-only.

The parent is the session's ``fork`` edge in ``orchestration_edges`` (written by the stores after
each fold step: ``ingestd.store.forks``, whose docstring gives the rules), with the evidence that
chose it read again from the same rows.
"""

from __future__ import annotations

from typing import Any

from ingestd.store import forks
from ingestd.store.connection import Db, storage_errors


def _has_columns(conn: Db) -> bool:
    if getattr(conn, "central", False):
        return True
    return "root_uuid" in {str(r[1]) for r in conn.execute("PRAGMA table_info(sessions)")}


def fork_parent(conn: Db, sid: str) -> dict[str, Any] | None:
    """The session ``sid`` was forked from: ``{"session_id", "evidence", "root_uuid"}`` (evidence
    ``forked_from`` | ``compaction_root`` | ``fork_hook_root``), None when no evidence names one.
    Read-only."""
    with storage_errors():
        if not _has_columns(conn):
            return None
        edge = conn.execute(
            "SELECT parent_agent_id FROM orchestration_edges WHERE session_id = ? AND child_agent_id = ?"
            " AND source = 'fork'",
            (sid, sid),
        ).fetchall()
        if not edge:
            return None
        p = forks.parent(conn, sid)
        root = conn.execute("SELECT root_uuid FROM sessions WHERE id = ?", (sid,)).fetchall()
        return {
            "session_id": str(edge[0][0]),
            "evidence": p[1] if p is not None and p[0] == edge[0][0] else None,
            "root_uuid": root[0][0] if root else None,
        }


def fork_children(conn: Db, sid: str) -> list[dict[str, Any]]:
    """The sessions forked from ``sid`` (their ``fork`` edges name it): ``[{"session_id",
    "evidence"}]`` by id. Read-only."""
    with storage_errors():
        if not _has_columns(conn):
            return []
        return [{"session_id": c, "evidence": ev} for c, ev in forks.children(conn, sid)]
