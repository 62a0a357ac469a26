"""The local watchdog pass's own: ``stale_count`` (what ``status`` and ``verify`` report) and the
cost of a pass that can change nothing. The rules of the pass are the contract suite's
(``tests/stores/test_watchdog.py``)."""

from __future__ import annotations

import apsw

from ingestd.store.upsert import UPSERT_AGENT
from ingestd.store.watchdog_pass import stale_count, watchdog_pass
from tests.support import statements


def agent(db: apsw.Connection, aid: str, parent: str | None, last_seen: str, status: str = "working") -> None:
    db.execute(
        UPSERT_AGENT,
        (
            aid,
            "s",
            "main" if parent is None else "subagent",
            None,
            status,
            parent,
            last_seen,
            last_seen,
            None,
            0,
            None,
            None,
        ),
    )


def statuses(db: apsw.Connection) -> dict[str, str]:
    return {str(a): str(s) for a, s in db.execute("SELECT id, status FROM agents")}


def setup(db: apsw.Connection) -> None:
    db.execute(
        "INSERT INTO sessions (id, status, last_activity_at) VALUES ('s', 'working', '2026-01-01T00:20:00.000Z')"
    )
    agent(db, "s", None, "2026-01-01T00:00:00.000Z")  # the main agent, blocked on a Task
    agent(db, "c", "s", "2026-01-01T00:05:00.000Z")  # its subagent
    agent(db, "g", "c", "2026-01-01T00:20:00.000Z")  # a grandchild, still working


def test_stale_count_counts_what_a_pass_would_move(db: apsw.Connection) -> None:
    setup(db)
    assert stale_count(db, "2026-01-01T00:15:00.000Z") == 0  # the grandchild works: nothing is idle
    assert stale_count(db, "2026-01-01T00:21:00.000Z") == 3 + 1  # its agents and the session
    assert watchdog_pass(db, "2026-01-01T00:31:00.000Z", 600) == 3
    assert stale_count(db, "2026-01-01T00:21:00.000Z") == 0


def _recursive(db: apsw.Connection, as_of: str) -> int:
    """One pass at ``as_of``; how many of its statements were recursive (the costly ones)."""
    with statements(db, "WITH RECURSIVE") as seen:
        watchdog_pass(db, as_of, 600)
    return len(seen)


def test_the_recursive_statements_run_only_when_a_row_could_change(db: apsw.Connection) -> None:
    # a pass runs in every hook transaction: with every agent active inside the window and none
    # moved to unknown, its two recursive statements (over every live agent) could change nothing
    setup(db)
    # a database that has run a while: an agent of an abandoned session the watchdog moved long ago
    # (its evidence status stays working); nothing live in its session can bring it back
    db.execute(
        "INSERT INTO sessions (id, status, last_activity_at) VALUES ('old', 'unknown', '2025-06-01T00:00:00.000Z')"
    )
    db.execute(
        UPSERT_AGENT,
        ("o", "old", "main", None, "working", None, *["2025-06-01T00:00:00.000Z"] * 2, None, 0, None, None),
    )
    db.execute("UPDATE agents SET status = 'unknown' WHERE session_id = 'old'")
    assert _recursive(db, "2026-01-01T00:09:00.000Z") == 0
    assert statuses(db) == {"s": "working", "c": "working", "g": "working", "o": "unknown"}
    # the idle ones; after them no agent of theirs is live, so none can come back
    assert _recursive(db, "2026-01-01T00:31:00.000Z") == 1
    assert statuses(db) == {"s": "unknown", "c": "unknown", "g": "unknown", "o": "unknown"}
    agent(db, "g", "c", "2026-01-01T00:40:00.000Z")
    assert _recursive(db, "2026-01-01T00:41:00.000Z") == 1  # none idle; the unknown ones come back
    assert statuses(db) == {"s": "working", "c": "working", "g": "working", "o": "unknown"}
