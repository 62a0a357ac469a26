"""A session's tool calls per agent and its compactions, in time order (SPEC §4.5, §4.6, §14).

The live view draws these as one timeline lane per agent; the read API serves the same document at
``GET /api/sessions/{id}/timeline``. Rows come from the ``tool_calls`` and ``compactions``
projections (one index range each: both tables are keyed by ``session_id`` first); what each call
did (its input and result), each subagent's prompt and answer and the person's prompts are read
from the log (``report.activity``), so a session from history has them too.
"""

from __future__ import annotations

from typing import Any

from ingestd.core.timefmt import parse
from ingestd.report.activity import session_activity
from ingestd.report.tree import resolve_session
from ingestd.store.connection import Db, storage_errors


def _duration_ms(started_at: str | None, ended_at: str | None) -> int | None:
    start = parse(started_at) if started_at else None
    end = parse(ended_at) if ended_at else None
    if start is None or end is None:
        return None
    return max(0, round((end - start).total_seconds() * 1000))


def timeline_report(conn: Db, session: str) -> dict[str, Any]:
    """Tool calls and compactions of one session (``session``: an id or a unique prefix). Read-only.

    Returns:
        ``{"session_id", "started_at", "last_activity_at", "agents", "tool_calls", "compactions",
        "prompts", "spawns"}``.
        ``agents`` lists the agent ids that own a tool call or a compaction, main agent first, then
        by first tool call; a call with no known agent is under ``null``. Each tool call is
        ``{"tool_use_id", "agent_id", "tool_name", "status", "started_at", "ended_at",
        "duration_ms", "input_summary", "input", "result"}`` (``duration_ms``: int milliseconds, None
        while running or when an end is unknown, e.g. ``interrupted``; ``input_summary``: one line,
        the Bash command, file path, pattern, URL or Task description; ``input``: the input as JSON
        text, bounded; ``result``: ``{"is_error", "size_bytes", "preview"}``; each None where the log
        has none), ordered by start (calls with no start last). ``prompts``: the person's prompts,
        ``[{"at", "text"}]`` in time order. ``spawns``: per subagent with a spawning call,
        ``{agent_id: {"tool_use_id", "prompt", "answer"}}`` (the Task / Agent call's prompt and the
        result its parent received). Each compaction
        is ``{"boundary_id", "agent_id", "occurred_at", "trigger", "pre_tokens"}`` ordered by time.

    Raises:
        InputError: see ``resolve_session``.
        StorageError: the database refused the read.
    """
    sid = resolve_session(conn, session)
    with storage_errors():
        srow = conn.execute("SELECT started_at, last_activity_at FROM sessions WHERE id = ?", (sid,)).fetchall()[0]
        main = {r[0] for r in conn.execute("SELECT id FROM agents WHERE session_id = ? AND type = 'main'", (sid,))}
        calls = [
            {
                "tool_use_id": tuid,
                "agent_id": aid,
                "tool_name": name,
                "status": status,
                "started_at": started,
                "ended_at": ended,
                "duration_ms": _duration_ms(started, ended),
            }
            for tuid, aid, name, status, started, ended in conn.execute(
                "SELECT tool_use_id, agent_id, tool_name, status, started_at, ended_at FROM tool_calls"
                " WHERE session_id = ? ORDER BY started_at IS NULL, started_at, tool_use_id",
                (sid,),
            )
        ]
        compactions = [
            {"boundary_id": bid, "agent_id": aid, "occurred_at": at, "trigger": trigger, "pre_tokens": pre}
            for bid, aid, at, trigger, pre in conn.execute(
                "SELECT boundary_id, agent_id, occurred_at, trigger, pre_tokens FROM compactions"
                " WHERE session_id = ? ORDER BY occurred_at IS NULL, occurred_at, boundary_id",
                (sid,),
            )
        ]
        edges = conn.execute(
            "SELECT child_agent_id, tool_use_id FROM orchestration_edges"
            " WHERE session_id = ? AND tool_use_id IS NOT NULL",
            (sid,),
        ).fetchall()
    done = session_activity(conn, sid)
    for c in calls:
        c.update(done.call_json(c["tool_use_id"]))
    spawns = {str(child): {"tool_use_id": str(tuid), **done.spawn_json(str(tuid))} for child, tuid in edges}
    order: dict[str | None, int] = {}
    for aid in (*sorted(main), *(c["agent_id"] for c in calls), *(c["agent_id"] for c in compactions)):
        order.setdefault(aid, len(order))
    return {
        "session_id": sid,
        "started_at": srow[0],
        "last_activity_at": srow[1],
        "agents": list(order),
        "tool_calls": calls,
        "compactions": compactions,
        "prompts": done.prompts,
        "spawns": spawns,
    }
