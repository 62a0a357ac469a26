"""A session forked from another, as an ``orchestration_edges`` row of provenance ``fork`` (SPEC §4.3,
DESIGN.md "Forks"), for both stores.

Claude Code writes a fork as a session of its own: ``--resume ID --fork-session`` copies the
parent's chain from its root into the new file, uuids and timestamps kept and ``sessionId``
rewritten, and nothing names the parent (2.1.332, run: ``fixtures/claude-2.1.332/fork``); ``/branch``
stamps each copy with ``forkedFrom: {sessionId, messageUuid}`` (2.1.332 bundle). Each session's fold
keeps its evidence (``sessions.root_uuid``, ``forked_from``, ``fork_start``); the parent is another
session, so it is a join over the final rows of several sessions (``parent``), strongest first:

1. ``forked_from``: the session the copies name (evidence ``forked_from``).
2. Else the session's root is a compaction boundary of another session whose own root differs:
   that session reached the boundary itself, the fork copied the chain from it (``compaction_root``).
3. Else, when a SessionStart said ``source: "fork"``, another session with the same root that no
   such hook marks (``fork_hook_root``).

Several candidates: the smallest session id (all copies share the root). A fork of a session never
compacted and never hooked shares its root with its parent and nothing tells which is the copy: no
parent is given (SPEC §4.3: a parent is never invented).

The edge is the fork session's (``session_id``), from the parent session's main agent (its id is
the parent's session id) to the fork's main agent (the fork's session id), ``created_at`` the fork's
``started_at``. After each fold step the stores recompute it for the sessions folded and for those
whose answer their rows can change (``affected``): the edge is then a function of the final rows,
whatever the order the sessions arrived in, and a replay rebuilds it identically.

Every function but ``refresh`` reads through ``q`` (an apsw connection, or
``central.pg.PgReadConn``: ``?`` placeholders, portable SQL) and writes nothing; ``refresh`` writes
the local store's edges (the central store's: ``ingestd.central.project.refresh_forks``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from ingestd.core.keys import stable_id
from ingestd.core.rows import EdgeRow
from ingestd.store.sqlgen import in_parts

if TYPE_CHECKING:  # names in annotations only: the fold state behind core.touch is no import of tree's
    from ingestd.core.rows import SessionRow
    from ingestd.core.touch import Ctx

FORK = "fork"  # orchestration_edges.source


class Reader(Protocol):
    """What these functions read through: ``execute(sql, params)`` giving rows."""

    def execute(self, sql: str, bindings: Any = ..., /) -> Any: ...


def _rows(q: Reader, sql: str, params: tuple[Any, ...]) -> list[Any]:
    return list(q.execute(sql, params))


def _evidence(q: Reader, sid: str) -> tuple[str | None, str | None, int] | None:
    row = _rows(q, "SELECT root_uuid, forked_from, fork_start FROM sessions WHERE id = ?", (sid,))
    if not row:
        return None
    return row[0][0], row[0][1], int(row[0][2] or 0)


def parent_from(
    q: Reader, sid: str, root: str | None, forked_from: str | None, fork_start: int
) -> tuple[str, str] | None:
    """``(parent session id, evidence)`` for a session with this evidence (module docstring), or None."""
    if forked_from and forked_from != sid:
        return forked_from, "forked_from"
    if not root:
        return None
    reached = _rows(
        q,
        "SELECT c.session_id FROM compactions c JOIN sessions s ON s.id = c.session_id"
        " WHERE c.boundary_id = ? AND c.session_id <> ? AND (s.root_uuid IS NULL OR s.root_uuid <> ?)"
        " ORDER BY c.session_id LIMIT 1",
        (root, sid, root),
    )
    if reached:
        return str(reached[0][0]), "compaction_root"
    if not fork_start:
        return None
    same = _rows(
        q, "SELECT id FROM sessions WHERE root_uuid = ? AND id <> ? AND fork_start = 0 ORDER BY id LIMIT 1", (root, sid)
    )
    if same:
        return str(same[0][0]), "fork_hook_root"
    return None


def parent(q: Reader, sid: str) -> tuple[str, str] | None:
    """``(parent session id, evidence)`` of session ``sid`` (module docstring), None when no evidence
    names one or the session has no row."""
    ev = _evidence(q, sid)
    return parent_from(q, sid, *ev) if ev is not None else None


def affected(q: Reader, sids: Iterable[str]) -> list[str]:
    """The sessions whose parent may change when the rows of ``sids`` change, ``sids`` included, sorted.

    A session's parent reads its own evidence, the compactions of the sessions its root is a boundary
    of, and the sessions of its root: so the sessions named by a changed session (``forked_from``),
    those whose root is its boundary or its root, and those whose current fork edge names it.
    """
    out = set(sids)
    for sid in sorted(out):
        ev = _evidence(q, sid)
        root = ev[0] if ev is not None else None
        for (child,) in _rows(
            q,
            "SELECT id FROM sessions WHERE forked_from = ?"
            " UNION SELECT s.id FROM compactions c JOIN sessions s ON s.root_uuid = c.boundary_id"
            " WHERE c.session_id = ?"
            " UNION SELECT id FROM sessions WHERE root_uuid = ?"
            " UNION SELECT child_agent_id FROM orchestration_edges WHERE source = 'fork' AND parent_agent_id = ?",
            (sid, sid, root, sid),
        ):
            out.add(str(child))
    return sorted(out)


def wanted(q: Reader, sids: Iterable[str]) -> dict[str, tuple[str, str | None] | None]:
    """For each of ``sids``: ``(parent session id, created_at)`` of the fork edge it should have, or
    None (no parent: any fork edge it has goes)."""
    out: dict[str, tuple[str, str | None] | None] = {}
    for sid in sids:
        p = parent(q, sid)
        if p is None:
            out[sid] = None
            continue
        started = _rows(q, "SELECT started_at FROM sessions WHERE id = ?", (sid,))
        out[sid] = (p[0], str(started[0][0]) if started and started[0][0] is not None else None)
    return out


def children(q: Reader, sid: str) -> list[tuple[str, str]]:
    """``(session id, evidence)`` of the sessions forked from ``sid`` (their fork edges), by id."""
    out = []
    for (cid,) in _rows(
        q,
        "SELECT child_agent_id FROM orchestration_edges WHERE source = 'fork' AND parent_agent_id = ?"
        " AND session_id = child_agent_id ORDER BY 1",
        (sid,),
    ):
        p = parent(q, str(cid))
        if p is not None and p[0] == sid:
            out.append((str(cid), p[1]))
    return out


def edge_row(child: str, parent_sid: str, created_at: str | None, ctx: Ctx) -> EdgeRow:
    """The fork edge of session ``child`` from session ``parent_sid``, stamped with ``ctx``."""
    return EdgeRow(stable_id(child, child), child, parent_sid, child, FORK, ctx.instance, ctx.host_id, created_at, None)


UPSERT_FORK = (
    "INSERT INTO orchestration_edges (id, session_id, parent_agent_id, child_agent_id, source, instance, host_id,"
    " created_at, tool_use_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (session_id, child_agent_id) DO UPDATE SET parent_agent_id = excluded.parent_agent_id,"
    " source = excluded.source, instance = excluded.instance, host_id = excluded.host_id,"
    " created_at = excluded.created_at, tool_use_id = excluded.tool_use_id"
)
DELETE_FORK = "DELETE FROM orchestration_edges WHERE session_id = ? AND child_agent_id = ? AND source = 'fork'"


# What a parent answer reads of a session's own row: its evidence, and the start its edge is dated by.
FORK_INPUTS = ("root_uuid", "forked_from", "fork_start", "started_at")


def settled(q: Reader, rows: Iterable[SessionRow]) -> set[str]:
    """The ids of the session ``rows`` about to be upserted (the last row per id counts) whose stored
    row already holds the same ``FORK_INPUTS``: their upsert moves no fork edge, so they need no
    ``refresh``. Read before the upsert; a session without a stored row is never settled.

    Sound only for a change that writes nothing else ``parent`` reads (no compaction written or
    retracted, no agent retracted): the caller checks that."""
    last = {r.id: (r.root_uuid, r.forked_from, int(r.fork_start or 0), r.started_at) for r in rows}
    out: set[str] = set()
    for marks, part in in_parts(sorted(last)):
        sql = f"SELECT id, {', '.join(FORK_INPUTS)} FROM sessions WHERE id IN ({marks})"
        for sid, root, forked_from, fork_start, started_at in _rows(q, sql, part):
            if last[sid] == (root, forked_from, int(fork_start or 0), started_at):
                out.add(str(sid))
    return out


def refresh(conn: Any, sids: Iterable[str], ctx: Ctx) -> None:
    """Make the local store's fork edges of ``affected(sids)`` what ``wanted`` says (inside the
    caller's write transaction; ``ctx``: the database's identity, stamped on the edges)."""
    todo = affected(conn, sids)
    for sid, want in wanted(conn, todo).items():
        if want is None:
            conn.execute(DELETE_FORK, (sid, sid))
        else:
            conn.execute(UPSERT_FORK, edge_row(sid, want[0], want[1], ctx))
