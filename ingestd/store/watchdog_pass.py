"""The watchdog's pass over the projections (DESIGN.md "Status", SPEC §4.2), inside a write transaction.

Agents and sessions idle for the window before the log's newest time go ``unknown``. The
cutoff is computed in the core (``ingestd.core.watchdog``); the window is a parameter (how it
is found is the caller's business; ``effective_window`` reads the one the log recorded). The
daemon's clock tick that logs a ``watchdog`` row is ``ingestd.daemon.watchdog``.
"""

from __future__ import annotations

from typing import Any

import apsw

from ingestd.core.watchdog import WATCHDOG_WINDOW_S, watchdog_cutoff

# An agent is not idle while any agent below it is working: a main agent blocked on a long
# Task is busy (found live: the parent showed `unknown` while its Explore subagent worked).
# `alive`: every non-terminal agent active inside the window, and all of its ancestors.
# Agents are (session_id, id) pairs (migration 0009); an ancestor is always in its child's session.
_ALIVE = (
    "WITH RECURSIVE alive(session_id, id) AS ("
    " SELECT session_id, id FROM agents WHERE status IN ('working', 'waiting') AND last_seen_at >= ?1"
    " UNION SELECT a.session_id, a.parent_agent_id FROM agents a"
    " JOIN alive ON a.session_id = alive.session_id AND a.id = alive.id"
    " WHERE a.parent_agent_id IS NOT NULL) "
)
_IDLE_AGENTS = (
    "status IN ('working', 'waiting') AND last_seen_at < ?1"
    " AND (session_id, id) NOT IN (SELECT session_id, id FROM alive)"
)
_IDLE_SESSIONS = "status IN ('working', 'waiting') AND last_activity_at < ?1"
# An agent the pass moved to `unknown` earlier gets its evidence status back once a descendant
# works again (that activity does not touch the ancestor's own row).
_BACK_FROM_UNKNOWN = (
    "UPDATE agents SET status = evidence_status WHERE status = 'unknown'"
    " AND evidence_status IN ('working', 'waiting') AND (session_id, id) IN (SELECT session_id, id FROM alive)"
)


# Cheap probes (index ranges, ``agents_status``) that say whether the pass's two recursive statements
# can change anything: without a candidate row each would change nothing, so they are skipped (most
# commits of a live daemon: every agent active inside the window, none moved to ``unknown`` yet).
_ANY_IDLE_AGENT = "SELECT 1 FROM agents WHERE status IN ('working', 'waiting') AND last_seen_at < ?1 LIMIT 1"
_ANY_UNKNOWN_AGENT = (
    "SELECT 1 FROM agents WHERE status = 'unknown' AND evidence_status IN ('working', 'waiting') LIMIT 1"
)


def effective_window(conn: apsw.Connection, default_s: int = WATCHDOG_WINDOW_S) -> int:
    """The watchdog window in force: the one the newest ``watchdog`` log row records, else ``default_s``.

    The window is part of the log (the daemon logs a row when it starts with a window other
    than the one in force), so `ingest`, the daemon and a replay all apply the same one.
    Read from ``meta.watchdog_window_s``, which ``apply_batch`` keeps with the rows. Read-only.
    """
    rows = conn.execute("SELECT value FROM meta WHERE key = 'watchdog_window_s'").fetchall()
    if rows and isinstance(rows[0][0], str) and rows[0][0].isdigit():
        return int(rows[0][0])
    return default_s


def stale_count(conn: apsw.Connection, cutoff: str) -> int:
    """How many agents and sessions a watchdog pass with ``cutoff`` would move to ``unknown``. Read-only."""
    agents: Any = conn.execute(
        _ALIVE + "SELECT count(*) FROM agents WHERE " + _IDLE_AGENTS,
        (cutoff,),
    ).fetchall()[0][0]
    sessions: Any = conn.execute(
        "SELECT count(*) FROM sessions WHERE " + _IDLE_SESSIONS,
        (cutoff,),
    ).fetchall()[0][0]
    return int(agents) + int(sessions)


def watchdog_pass(conn: apsw.Connection, as_of: str, window_s: int) -> int:
    """Move non-terminal agents (and sessions) idle for ``window_s`` before ``as_of`` to ``unknown``.

    An agent with a working descendant is not idle; one moved earlier gets its evidence status
    back when a descendant works again. A function of the final rows, so replay agrees. Runs in
    the caller's transaction.

    Args:
        as_of: str, canonical UTC; the newest log time (never the wall clock, so replays agree).
        window_s: int, seconds.

    Returns:
        int, agents changed.
    """
    cutoff = watchdog_cutoff(as_of, window_s)
    if cutoff is None:
        return 0
    n = 0
    if conn.execute(_ANY_IDLE_AGENT, (cutoff,)).fetchall():
        conn.execute(_ALIVE + "UPDATE agents SET status = 'unknown' WHERE " + _IDLE_AGENTS, (cutoff,))
        n = conn.changes()
    if conn.execute(_ANY_UNKNOWN_AGENT).fetchall():
        conn.execute(_ALIVE + _BACK_FROM_UNKNOWN, (cutoff,))
    conn.execute("UPDATE sessions SET status = 'unknown' WHERE " + _IDLE_SESSIONS, (cutoff,))
    return n
