"""tool_calls.status from transcript results and hooks, converging in any order (SPEC §4.5)."""

from __future__ import annotations

import itertools

import orjson
import pytest

from ingestd.core.project import fold
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core.projector_support import Model

SID = "12121212-1212-4121-8121-121212121212"
ORIGIN = f"-home-u-s/{SID}.jsonl"


def hook(i: int, name: str, **body: object) -> LogRow:
    payload = orjson.dumps(
        {"session_id": SID, "hook_event_name": name, "tool_name": "Bash", "tool_use_id": "tu", **body}
    )
    return LogRow(i, "hook", name, payload, f"2026-01-01T00:00:0{i}.000Z", SID, "hook")


def use(i: int) -> LogRow:
    block = {"type": "tool_use", "id": "tu", "name": "Bash", "input": {}}
    obj = {"type": "assistant", "uuid": "a", "timestamp": "2026-01-01T00:00:00.000Z", "message": {"content": [block]}}
    return LogRow(i, "jsonl", "assistant", orjson.dumps(obj), "2026-03-01T00:00:00.000Z", SID, ORIGIN, 0, 0)


def result(i: int, text: str, is_error: bool) -> LogRow:
    block = {"type": "tool_result", "tool_use_id": "tu", "content": text, "is_error": is_error}
    obj = {"type": "user", "uuid": "r", "timestamp": "2026-01-01T00:00:05.000Z", "message": {"content": [block]}}
    return LogRow(i, "jsonl", "user", orjson.dumps(obj), "2026-03-01T00:00:00.000Z", SID, ORIGIN, 0, 100)


CASES = {
    "running": [use(1), hook(2, "PreToolUse", tool_input={})],
    "completed": [use(1), hook(2, "PreToolUse"), hook(3, "PostToolUse", tool_response={}), result(4, "ok", False)],
    "failed": [
        hook(2, "PreToolUse"),
        hook(3, "PostToolUseFailure", error="exit 1", is_interrupt=False),
        result(4, "Error: exit 1", True),
    ],
    # corpus/claude-projects/-home-user-projects-spotter/55604662-….jsonl: a cancelled call
    "interrupted": [
        use(1),
        hook(3, "PostToolUseFailure", error="x", is_interrupt=True),
        result(4, "The user doesn't want to proceed with this tool use.", True),
    ],
    "denied": [
        use(1),
        hook(3, "PostToolUseFailure", error="x"),
        result(4, "Permission to use Bash has been denied.", True),
    ],
    "denied_hook": [use(1), hook(2, "PreToolUse"), hook(3, "PermissionDenied")],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_status_converges_whatever_arrives_first_or_twice(case: str) -> None:
    rows = CASES[case]
    got = set()
    for order in itertools.permutations([*rows, rows[-1]]):
        m = Model()
        state = None
        for r in order:
            state, ch = fold(state, SID, [r], Ctx())
            m.apply(ch)
        got.add(m.tables["tools"][(SID, "tu")][6])
    assert got == {case.removesuffix("_hook")}
