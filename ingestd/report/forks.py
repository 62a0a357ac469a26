"""Which session a session was forked from, and which were forked from it (DESIGN.md "Forks"). Read-only.

Claude Code writes a fork as a session of its own: ``--resume ID --fork-session`` copies the
parent's chain from its root into the new file, uuids and timestamps kept and ``sessionId``
rewritten, and nothing names the parent (2.1.332, run: ``fixtures/claude-2.1.332/fork``); ``/branch``
stamps each copy with ``forkedFrom: {sessionId, messageUuid}`` (2.1.332 bundle). Each session's fold
keeps its evidence (``sessions.root_uuid``, ``forked_from``, ``fork_start``); the parent is
another session, so it is joined here, when read, from the final rows (any order of ingestion
gives the same answer):

1. ``forked_from``: the session the copies name (evidence ``forked_from``).
2. Else the session's root is a compaction boundary of another session whose own root differs:
   that session reached the boundary itself, the fork copied the chain from it (``compaction_root``).
3. Else, when a SessionStart said ``source: "fork"``, another session with the same root that no
   such hook marks (``fork_hook_root``).

Several candidates: the smallest session id (all copies share the root). A fork of a session never
compacted and never hooked shares its root with its parent and nothing tells which is the copy: no
parent is given (SPEC §4.3: a parent is never invented).
"""

from __future__ import annotations

from typing import Any

from ingestd.store.connection import Db, storage_errors


def _has_columns(conn: Db) -> bool:
    if getattr(conn, "central", False):
        return True
    return "root_uuid" in {str(r[1]) for r in conn.execute("PRAGMA table_info(sessions)")}


def _parent(conn: Db, sid: str, root: str | None, forked_from: str | None, fork_start: int) -> dict[str, Any] | None:
    if forked_from:
        return {"session_id": forked_from, "evidence": "forked_from", "root_uuid": root}
    if not root:
        return None
    reached: list[Any] = conn.execute(
        "SELECT c.session_id FROM compactions c JOIN sessions s ON s.id = c.session_id"
        " WHERE c.boundary_id = ? AND c.session_id <> ? AND (s.root_uuid IS NULL OR s.root_uuid <> ?)"
        " ORDER BY c.session_id LIMIT 1",
        (root, sid, root),
    ).fetchall()
    if reached:
        return {"session_id": str(reached[0][0]), "evidence": "compaction_root", "root_uuid": root}
    if not fork_start:
        return None
    same: list[Any] = conn.execute(
        "SELECT id FROM sessions WHERE root_uuid = ? AND id <> ? AND fork_start = 0 ORDER BY id LIMIT 1",
        (root, sid),
    ).fetchall()
    if same:
        return {"session_id": str(same[0][0]), "evidence": "fork_hook_root", "root_uuid": root}
    return None


def _evidence(conn: Db, sid: str) -> tuple[str | None, str | None, int] | None:
    row: list[Any] = conn.execute(
        "SELECT root_uuid, forked_from, fork_start FROM sessions WHERE id = ?", (sid,)
    ).fetchall()
    if not row:
        return None
    return row[0][0], row[0][1], int(row[0][2] or 0)


def fork_parent(conn: Db, sid: str) -> dict[str, Any] | None:
    """The session ``sid`` was forked from: ``{"session_id", "evidence", "root_uuid"}`` (evidence
    ``forked_from`` | ``compaction_root`` | ``fork_hook_root``, module docstring), None when no
    evidence names one. Read-only."""
    with storage_errors():
        if not _has_columns(conn):
            return None
        ev = _evidence(conn, sid)
        return _parent(conn, sid, *ev) if ev is not None else None


def fork_children(conn: Db, sid: str) -> list[dict[str, Any]]:
    """The sessions forked from ``sid`` (each one's ``fork_parent`` is ``sid``):
    ``[{"session_id", "evidence"}]`` by id. Read-only."""
    with storage_errors():
        if not _has_columns(conn):
            return []
        ev = _evidence(conn, sid)
        own_root = ev[0] if ev is not None else None
        candidates: list[Any] = conn.execute(
            "SELECT id, root_uuid, forked_from, fork_start FROM sessions WHERE id <> ? AND (forked_from = ?"
            " OR root_uuid IN (SELECT boundary_id FROM compactions WHERE session_id = ?)"
            " OR (root_uuid = ? AND fork_start <> 0))",
            (sid, sid, sid, own_root or ""),
        ).fetchall()
        out = []
        for cid, root, forked_from, start in candidates:
            p = _parent(conn, str(cid), root, forked_from, int(start or 0))
            if p is not None and p["session_id"] == sid:
                out.append({"session_id": str(cid), "evidence": p["evidence"]})
    return sorted(out, key=lambda c: c["session_id"])
