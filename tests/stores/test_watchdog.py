"""The watchdog pass (SPEC §4.2; ``ingestd.store.watchdog_pass`` and its central form,
``ingestd.central.project.watchdog``): agents and sessions idle for the window before the log's
newest time become unknown, but not while an agent below them works."""

from __future__ import annotations

from ingestd.core.derive import Changes
from ingestd.core.rows import AgentRow, SessionRow
from tests.stores.stores import Store


def agent(aid: str, parent: str | None, last_seen: str, sid: str = "s") -> AgentRow:
    kind = "main" if parent is None else "subagent"
    return AgentRow(aid, sid, kind, None, "working", parent, last_seen, last_seen, None, 0, None)


def session(sid: str, last_activity: str) -> SessionRow:
    return SessionRow(sid, None, None, None, last_activity, "working", None, None, None, None, None, None, None)


def write(store: Store, *agents: AgentRow, sid: str = "s", last_activity: str | None = None) -> None:
    ch = Changes(agents=list(agents))
    if last_activity is not None:
        ch.sessions.append(session(sid, last_activity))
    store.write(ch, sid=sid)


def statuses(store: Store, sid: str = "s") -> dict[str, str]:
    return {str(a): str(s) for a, s in store.rows("SELECT id, status FROM agents WHERE session_id = ?", (sid,))}


def session_status(store: Store, sid: str = "s") -> str:
    return str(store.rows("SELECT status FROM sessions WHERE id = ?", (sid,))[0][0])


def setup(store: Store, sid: str = "s") -> None:
    write(
        store,
        agent("s", None, "2026-01-01T00:00:00.000Z", sid),  # the main agent, blocked on a Task
        agent("c", "s", "2026-01-01T00:05:00.000Z", sid),  # its subagent
        agent("g", "c", "2026-01-01T00:20:00.000Z", sid),  # a grandchild, still working
        sid=sid,
        last_activity="2026-01-01T00:20:00.000Z",
    )


def test_a_working_descendant_keeps_every_ancestor_out_of_unknown(store: Store) -> None:
    setup(store)
    assert store.watchdog("2026-01-01T00:25:00.000Z", 600) == 0
    assert statuses(store) == {"s": "working", "c": "working", "g": "working"}
    assert session_status(store) == "working"


def test_once_the_whole_subtree_is_quiet_the_agents_and_the_session_become_unknown(store: Store) -> None:
    setup(store)
    assert store.watchdog("2026-01-01T00:31:00.000Z", 600) == 3
    assert statuses(store) == {"s": "unknown", "c": "unknown", "g": "unknown"}
    assert session_status(store) == "unknown"


def test_the_window_decides(store: Store) -> None:
    setup(store)
    store.watchdog("2026-01-01T00:31:00.000Z", 3600)
    assert statuses(store) == {"s": "working", "c": "working", "g": "working"}


def test_new_work_below_gives_ancestors_their_evidence_status_back(store: Store) -> None:
    setup(store)
    store.watchdog("2026-01-01T00:31:00.000Z", 600)
    write(store, agent("g", "c", "2026-01-01T00:40:00.000Z"))  # the grandchild works again: only its row is written
    store.watchdog("2026-01-01T00:41:00.000Z", 600)
    assert statuses(store) == {"s": "working", "c": "working", "g": "working"}


def test_the_result_does_not_depend_on_earlier_passes(store: Store) -> None:
    """Live runs a pass after every transaction; a replay runs one at the end: same rows (session
    ``s`` had the earlier passes, ``r`` the same rows and only the last)."""
    setup(store)
    write(store, agent("d", "s", "2026-01-01T00:05:00.000Z"))  # a sibling that stays quiet
    for as_of in ("2026-01-01T00:16:00.000Z", "2026-01-01T00:31:00.000Z"):
        store.watchdog(as_of, 600)
    write(store, agent("g", "c", "2026-01-01T00:40:00.000Z"))
    setup(store, "r")
    write(
        store,
        agent("d", "s", "2026-01-01T00:05:00.000Z", "r"),
        agent("g", "c", "2026-01-01T00:40:00.000Z", "r"),
        sid="r",
    )
    store.watchdog("2026-01-01T00:41:00.000Z", 600)
    assert statuses(store) == {"s": "working", "c": "working", "g": "working", "d": "unknown"}
    assert statuses(store, "r") == statuses(store)
