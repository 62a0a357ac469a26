"""The watchdog's pass over the projections (DESIGN.md "Status", SPEC §4.2), inside a write transaction.

Agents and sessions idle for the window before the log's newest time go ``unknown``. The
cutoff is computed in the core (``ingestd.core.watchdog``); the window is a parameter (how it
is found is the caller's business; ``effective_window`` reads the one the log recorded). The
daemon's clock tick that logs a ``watchdog`` row is ``ingestd.daemon.root``.
"""

from __future__ import annotations

from typing import Any

from ingestd.core.timefmt import from_epoch_ns
from ingestd.core.watchdog import WATCHDOG_WINDOW_S, reference_time, watchdog_cutoff
from ingestd.store.connection import Db

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
# ``_BACK_FROM_UNKNOWN`` changes an unknown agent only when it is in ``alive``: an ancestor of an
# agent active inside the window (``alive``'s seeds are working or waiting, never unknown), which is
# in its session. So it is probed from the live side: an active agent with an unknown agent in its
# session. Probing the unknown side alone matched every agent of every abandoned session the
# watchdog ever moved (its evidence status stays), so on any database that had run a while the
# statement always ran. Plan: the ``agents_status`` range of the active ones, then each one's session
# by an index led by session_id (``+u.status``: not the ``agents_status`` range of every unknown agent).
_ANY_UNKNOWN_AGENT = (
    "SELECT 1 FROM agents a WHERE a.status IN ('working', 'waiting') AND a.last_seen_at >= ?1"
    " AND EXISTS (SELECT 1 FROM agents u WHERE u.session_id = a.session_id AND +u.status = 'unknown'"
    " AND u.evidence_status IN ('working', 'waiting')) LIMIT 1"
)


def effective_window(conn: Db, default_s: int = WATCHDOG_WINDOW_S) -> int:
    """The watchdog window in force: the one the newest ``watchdog`` log row records, else ``default_s``.

    The window is part of the log (the daemon logs a row when it starts with a window other
    than the one in force), so `ingest`, the daemon and a replay all apply the same one.
    Read from ``meta.watchdog_window_s``, which ``apply_batch`` keeps with the rows. Read-only.
    """
    rows = conn.execute("SELECT value FROM meta WHERE key = 'watchdog_window_s'").fetchall()
    if rows and isinstance(rows[0][0], str) and rows[0][0].isdigit():
        return int(rows[0][0])
    return default_s


def clock_bound(now_ns: int) -> str:
    """The clock reading ``now_ns`` (ns since the epoch) rounded up to the next whole second,
    canonical UTC: a bound no receipt time stamped before it exceeds."""
    return from_epoch_ns((now_ns // 1_000_000_000 + 1) * 1_000_000_000)


def reference(conn: Db, newest: str, now: str, first_id: int | None = None) -> str:
    """The ``as_of`` to run the pass at: the log's newest time ``newest``, capped at the clock ``now``.

    ``newest`` not after ``now`` (the normal case) is returned without a read. Otherwise (the log
    holds a receipt time in the future: a read or hook taken while the clock was ahead) the
    reference is the newest log time not after ``now`` (``core.watchdog.reference_time``): the
    one kept in ``meta.watchdog_as_of`` (the log is scanned once when none is kept) or that of the
    rows from log id ``first_id`` on (this batch's), and it is kept for the next batch.

    Args:
        conn: inside the caller's write transaction.
        newest, now: canonical UTC.
        first_id: the batch's first log id, or None (no batch).

    Returns:
        str, canonical UTC ('' when the log has no time at or before ``now``).
    """
    if newest <= now:
        return newest
    got = conn.execute("SELECT value FROM meta WHERE key = 'watchdog_as_of'").fetchall()
    held = got[0][0] if got and isinstance(got[0][0], str) else None
    if held is None:  # the whole log's, which covers this batch's rows too
        held, past = newest_before(conn, now), ""
    else:
        past = newest_before(conn, now, first_id) if first_id is not None else ""
    ref = reference_time(newest, past, held, now)
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('watchdog_as_of', ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (ref,),
    )
    return ref


def newest_before(conn: Db, now: str, first_id: int = 0) -> str:
    """The newest ``received_at`` not after ``now`` of the log rows from id ``first_id`` on ('' for none)."""
    v: Any = conn.execute(
        "SELECT max(received_at) FROM events_raw WHERE id >= ? AND received_at <= ?", (first_id, now)
    ).fetchall()[0][0]
    return v if isinstance(v, str) else ""


def stale_count(conn: Db, cutoff: str) -> int:
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


def watchdog_pass(conn: Db, as_of: str, window_s: int) -> int:
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
    if conn.execute(_ANY_UNKNOWN_AGENT, (cutoff,)).fetchall():
        conn.execute(_ALIVE + _BACK_FROM_UNKNOWN, (cutoff,))
    conn.execute("UPDATE sessions SET status = 'unknown' WHERE " + _IDLE_SESSIONS, (cutoff,))
    return n
