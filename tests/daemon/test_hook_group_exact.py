"""Group commit is exact: the hook deliveries of several sessions, interleaved in one grouped
transaction of the hook writer (``ThreadWriter``: one ``make_apply`` call per group), give every
projection table the rows that the same deliveries give when each is committed alone, in its own
transaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.core import hookkeys
from ingestd.core.records import NewLogRow
from ingestd.daemon import hookwriter
from ingestd.http.hooks import hook_row
from ingestd.projection.dump import TABLES, canonical_rows, columns
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate

SESSIONS = [f"c0000000-0000-4000-8000-{i:012d}" for i in range(3)]
T0_NS = 1_780_000_000_000_000_000


def _deliveries(sid: str, k: int) -> list[dict[str, Any]]:
    """One session's life in hooks: start, a prompt, a subagent with a tool call, tools, a stop, an end."""
    agent = f"a{k}c0ffee"
    base = {"session_id": sid, "cwd": f"/home/u/p{k}", "transcript_path": f"/t/{sid}.jsonl"}
    return [
        {**base, "hook_event_name": "SessionStart", "source": "startup"},
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": f"do {k}"},
        {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": f"tu_{k}_1", "tool_input": {}},
        {**base, "hook_event_name": "SubagentStart", "agent_id": agent, "agent_type": "Explore"},
        {**base, "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_use_id": f"tu_{k}_2", "agent_id": agent},
        {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"tu_{k}_1", "tool_response": 1},
        {**base, "hook_event_name": "PostToolUseFailure", "tool_name": "Read", "tool_use_id": f"tu_{k}_2",
         "agent_id": agent, "error": "x"},
        {**base, "hook_event_name": "SubagentStop", "agent_id": agent, "agent_type": "Explore"},
        {**base, "hook_event_name": "Notification", "message": "waiting"},
        {**base, "hook_event_name": "Stop"},
        {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": f"tu_{k}_3", "tool_input": {}},
        {**base, "hook_event_name": "SessionEnd", "reason": "exit"},
    ]  # fmt: skip


def _interleaved() -> list[NewLogRow]:
    """Every session's deliveries, taken in turn (s0 d0, s1 d0, s2 d0, s0 d1, ...), a second apart."""
    lives = [_deliveries(sid, k) for k, sid in enumerate(SESSIONS)]
    out: list[NewLogRow] = []
    for step in range(len(lives[0])):
        for life in lives:
            n = len(out)
            body = orjson.dumps(life[step])
            parsed = hookkeys.parse_body(body)
            assert not isinstance(parsed, hookkeys.Rejected)
            key = hookkeys.idempotency_key(parsed, header_key=None, received_ns=n, instance="test", counter=n)
            out.append(hook_row(parsed, body, key, T0_NS + n * 1_000_000_000))
    return out


def _projections(db: Path) -> dict[str, list[Any]]:
    """Every projection table, canonical; ``orchestration_edges.instance`` names the database, left out."""
    conn = connect(db, readonly=True)
    try:
        out = {t: canonical_rows(conn, t) for t, _ in TABLES}
        i = columns(conn, "orchestration_edges").index("instance")
        out["orchestration_edges"] = [r[:i] + r[i + 1 :] for r in out["orchestration_edges"]]
        out["events_raw"] = list(
            conn.execute("SELECT idempotency_key, payload, received_at FROM events_raw ORDER BY id")
        )
        return out
    finally:
        conn.close()


def _run(db: Path, groups: list[list[NewLogRow]]) -> dict[str, list[Any]]:
    """Each group as the hook writer commits one: the rows of its deliveries through one ``make_apply``
    call, one transaction."""
    conn = connect(db)
    migrate(conn)
    apply = hookwriter.make_apply()
    for group in groups:
        assert apply(conn, group) == len(group)
    conn.close()
    return _projections(db)


@pytest.mark.parametrize("group_size", [36, 5])
def test_interleaved_sessions_in_one_group_equal_one_by_one(tmp_path: Path, group_size: int) -> None:
    rows = _interleaved()
    assert len(rows) == 36
    alone = _run(tmp_path / "alone.db", [[r] for r in rows])
    grouped = _run(tmp_path / "grouped.db", [rows[i : i + group_size] for i in range(0, len(rows), group_size)])
    assert grouped.keys() == alone.keys()
    for table in alone:
        assert grouped[table] == alone[table], table
    # the test has something to compare: every session, its subagent, tool calls and ends
    assert len(alone["sessions"]) == 3 and len(alone["agents"]) == 6
    assert len(alone["tool_calls"]) == 9 and len(alone["events"]) == 36
    assert {r[5] for r in alone["sessions"]} == {"completed"}
