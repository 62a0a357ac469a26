"""The central store's watchdog pass: ``ingestd.store.watchdog_pass.watchdog_pass`` per session, with the
``as_of`` and window of the hosts that logged it (``hosts.log_as_of``, ``hosts.watchdog_window_s``).

Runs in each slice's transaction of ``ingestd.central.project.project_store``.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ingestd.core.watchdog import WATCHDOG_WINDOW_S, watchdog_cutoff

_CUT = (
    "CREATE TEMP TABLE watchdog_cut ON COMMIT DROP AS"
    " SELECT sh.session_id, max(h.cutoff) AS cutoff FROM session_hosts sh"
    " JOIN (SELECT unnest(%s::text[]) AS host_id, unnest(%s::text[]) AS cutoff) h ON h.host_id = sh.host_id"
    " GROUP BY sh.session_id"
)
_ALIVE = (
    "WITH RECURSIVE alive(session_id, id) AS ("
    " SELECT a.session_id, a.id FROM agents a JOIN watchdog_cut c ON c.session_id = a.session_id"
    " WHERE a.status IN ('working', 'waiting') AND a.last_seen_at >= c.cutoff"
    " UNION SELECT a.session_id, a.parent_agent_id FROM agents a JOIN alive"
    " ON a.session_id = alive.session_id AND a.id = alive.id WHERE a.parent_agent_id IS NOT NULL) "
)
_IDLE = (
    "UPDATE agents a SET status = 'unknown' FROM watchdog_cut c WHERE c.session_id = a.session_id"
    " AND a.status IN ('working', 'waiting') AND a.last_seen_at < c.cutoff"
    " AND NOT EXISTS (SELECT 1 FROM alive WHERE alive.session_id = a.session_id AND alive.id = a.id)"
)
_BACK = (
    "UPDATE agents a SET status = a.evidence_status WHERE a.status = 'unknown'"
    " AND a.evidence_status IN ('working', 'waiting')"
    " AND EXISTS (SELECT 1 FROM alive WHERE alive.session_id = a.session_id AND alive.id = a.id)"
)
_IDLE_SESSIONS = (
    "UPDATE sessions s SET status = 'unknown' FROM watchdog_cut c WHERE c.session_id = s.id"
    " AND s.status IN ('working', 'waiting') AND s.last_activity_at < c.cutoff"
)


def watchdog(pg: psycopg.Connection[Any]) -> int:
    """The watchdog pass of ``ingestd.store.watchdog_pass.watchdog_pass``, per session with its hosts' ``as_of``.

    Call inside a transaction. Returns the agents moved to ``unknown``.
    """
    hosts: list[str] = []
    cutoffs: list[str] = []
    for h, as_of, window in pg.execute("SELECT host_id, log_as_of, watchdog_window_s FROM hosts"):
        cut = watchdog_cutoff(as_of, int(window or WATCHDOG_WINDOW_S)) if isinstance(as_of, str) else None
        if cut is not None:
            hosts.append(str(h))
            cutoffs.append(cut)
    pg.execute(_CUT, (hosts, cutoffs))
    n = pg.execute(_ALIVE + _IDLE).rowcount
    pg.execute(_ALIVE + _BACK)
    pg.execute(_IDLE_SESSIONS)
    pg.execute("DROP TABLE watchdog_cut")
    return n
