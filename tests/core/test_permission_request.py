"""PermissionRequest hooks (FORMATS.md §7.2): recorded, never a tool-call outcome without an id."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core.projector_support import Model, hook_row

SID = "77777777-7777-4777-8777-777777777777"
REAL = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "hooks" / "crypto" / "PermissionRequest.jsonl"
CMD = {"command": "git rm --cached x.txt", "description": "Remove test files from staging"}


def hook(i: int, name: str, ts: str, **body: object) -> LogRow:
    return hook_row(SID, i, name, f"2026-01-01T00:00:0{ts}.000Z", **body)


def _project(rows: list[LogRow]) -> Model:
    m = Model()
    m.apply(fold_log(SID, rows, Ctx())[1])
    return m


def test_permission_request_is_an_event_and_leaves_tool_calls_alone() -> None:
    rows = [
        hook(1, "PreToolUse", "1", tool_name="Bash", tool_input=CMD, tool_use_id="t1"),
        hook(2, "PermissionRequest", "2", tool_name="Bash", tool_input=CMD),
        # the same command asked for again: no way to tell which call a request belongs to
        hook(3, "PreToolUse", "3", tool_name="Bash", tool_input=CMD, tool_use_id="t2"),
        hook(4, "PostToolUse", "4", tool_name="Bash", tool_input=CMD, tool_use_id="t2"),
    ]
    for order in (rows, rows[::-1]):
        m = _project(order)
        assert {k[1]: v[6] for k, v in m.tables["tools"].items()} == {"t1": "running", "t2": "completed"}
        assert m.tables["events"][2].event_type == "PermissionRequest" and m.tables["events"][2].agent_id == SID
        assert m.agent(SID).last_seen_at == "2026-01-01T00:00:04.000Z"


def test_permission_request_alone_creates_no_tool_call() -> None:
    m = _project([hook(1, "PermissionRequest", "1", tool_name="Bash", tool_input=CMD)])
    assert m.tables["tools"] == {}
    assert len(m.tables["events"]) == 1 and m.agent(SID)[4] == "working"


@pytest.mark.skipif(not REAL.is_file(), reason=f"real corpus not found at {REAL}")
def test_real_permission_requests_have_no_tool_use_id() -> None:
    for i, raw in enumerate(REAL.read_bytes().splitlines(), start=1):
        body = orjson.loads(raw)
        assert "tool_use_id" not in body
        m = Model()
        sid = body["session_id"]
        m.apply(
            fold_log(
                sid, [LogRow(i, "hook", "PermissionRequest", raw, "2026-01-01T00:00:00.000Z", sid, "hook")], Ctx()
            )[1]
        )
        assert m.tables["tools"] == {} and len(m.tables["events"]) == 1
