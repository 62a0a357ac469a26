"""Subagent ``error`` and ``outcome_cause`` from transcript and hook evidence (SPEC §4.2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.core.framing import split_lines
from ingestd.core.keys import short_hash
from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow, line_row, path_info
from ingestd.core.touch import Ctx
from tests.core.projector_support import Model, hook_row

SID = "88888888-8888-4888-8888-888888888888"
AG = "a7777777"
SUB = f"-p/{SID}/subagents/agent-{AG}.jsonl"
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "claude-projects"


def rec(i: int, typ: str, **kw: Any) -> LogRow:
    obj = {
        "type": typ,
        "sessionId": SID,
        "agentId": AG,
        "isSidechain": True,
        "timestamp": f"2026-01-01T00:00:{i:02}.000Z",
    }
    obj.update(kw)
    return LogRow(i, "jsonl", typ, orjson.dumps(obj), "2026-01-02T00:00:00.000Z", SID, SUB, 0, i * 100, obj)


def prompt(i: int, text: str = "do it") -> LogRow:
    return rec(i, "user", parentUuid=None if i == 1 else "x", message={"role": "user", "content": text})


def reply(i: int, text: str = "done", model: str = "claude-sonnet-4-5", **kw: Any) -> LogRow:
    msg = {"id": f"m{i}", "model": model, "content": [{"type": "text", "text": text}]}
    return rec(i, "assistant", message=msg, **kw)


def tool_use(i: int) -> LogRow:
    msg = {"id": f"m{i}", "model": "m", "content": [{"type": "tool_use", "id": f"tu{i}", "name": "Bash", "input": {}}]}
    return rec(i, "assistant", message=msg)


def tool_result(i: int, of: int, text: str, is_error: bool) -> LogRow:
    block = {"type": "tool_result", "tool_use_id": f"tu{of}", "content": text, "is_error": is_error}
    return rec(i, "user", message={"role": "user", "content": [block]})


def hook(i: int, name: str, **body: object) -> LogRow:
    return hook_row(SID, 1000 + i, name, f"2026-01-01T00:01:{i:02}.000Z", **body)


def outcome(rows: list[LogRow], agent: str = AG) -> tuple[str, str | None]:
    got = set()
    for order in (rows, rows[::-1]):
        m = Model()
        m.apply(fold_log(SID, order, Ctx())[1])
        a = m.agent(agent)
        got.add((a.status, a.outcome_cause))
    assert len(got) == 1, got  # order independent
    return got.pop()


def test_rate_limit_synthetic_turn_is_concurrency_limit() -> None:
    limit = reply(3, "Limit reached · resets 7pm", model="<synthetic>", isApiErrorMessage=True, error="rate_limit")
    assert outcome([prompt(1), tool_use(2), limit]) == ("error", "concurrency_limit")
    # 1.0.48 form: only the flag, the text says it
    old = reply(3, "Limit reached · resets 7pm", model="<synthetic>", isApiErrorMessage=True)
    assert outcome([prompt(1), tool_use(2), old]) == ("error", "concurrency_limit")


def test_other_api_error_turn_is_dispatch_unavailable() -> None:
    err = reply(3, "API Error: 529 overloaded_error", model="<synthetic>", isApiErrorMessage=True)
    assert outcome([prompt(1), tool_use(2), err]) == ("error", "dispatch_unavailable")


def test_synthetic_turn_that_is_no_error_is_not_a_failure() -> None:
    assert outcome([prompt(1), reply(2, "No response requested.", model="<synthetic>")]) == ("working", None)


def test_interrupt_marker_is_user_interrupt() -> None:
    rows = [prompt(1), tool_use(2), tool_result(3, 2, "The user doesn't want to proceed with this tool use.", True)]
    assert outcome([*rows, prompt(4, "[Request interrupted by user for tool use]")]) == ("error", "user_interrupt")
    assert outcome(rows) == ("error", "user_interrupt")


def test_interrupt_hook_is_user_interrupt() -> None:
    rows = [prompt(1), tool_use(2)]
    fail = hook(1, "PostToolUseFailure", agent_id=AG, tool_use_id="tu2", tool_name="Bash", error="x", is_interrupt=True)
    assert outcome([*rows, fail]) == ("error", "user_interrupt")
    plain = hook(
        1, "PostToolUseFailure", agent_id=AG, tool_use_id="tu2", tool_name="Bash", error="x", is_interrupt=False
    )
    assert outcome([*rows, plain]) == ("working", None)


def test_session_end_mid_run_is_terminated_early_and_a_finished_run_completed() -> None:
    end = hook(9, "SessionEnd", reason="other")
    assert outcome([prompt(1), tool_use(2), end]) == ("error", "terminated_early")
    assert outcome([prompt(1), tool_use(2), tool_result(3, 2, "ok", False), end]) == ("error", "terminated_early")
    assert outcome([prompt(1), tool_use(2), tool_result(3, 2, "ok", False), reply(4), end]) == ("completed", None)
    # a SubagentStop says the run stopped normally: completed, not terminated
    stop = hook(8, "SubagentStop", agent_id=AG, agent_type="Explore")
    assert outcome([prompt(1), tool_use(2), stop, end]) == ("completed", None)


def test_denied_tool_as_last_turn_of_an_ended_session_is_permission_failed() -> None:
    denied = tool_result(3, 2, "Permission to use Bash has been denied.", True)
    assert outcome([prompt(1), tool_use(2), denied]) == ("working", None)  # it may still reply
    assert outcome([prompt(1), tool_use(2), denied, hook(9, "SessionEnd")]) == ("error", "permission_failed")


def test_spawn_result_beats_the_transcript_ending() -> None:
    spawn = LogRow(
        500,
        "jsonl",
        "assistant",
        orjson.dumps({}),
        "2026-01-02T00:00:00.000Z",
        SID,
        f"-p/{SID}.jsonl",
        0,
        0,
        {
            "type": "assistant",
            "sessionId": SID,
            "timestamp": "2026-01-01T00:00:00.500Z",
            "message": {
                "id": "mspawn",
                "model": "m",
                "content": [{"type": "tool_use", "id": "tuS", "name": "Task", "input": {"prompt": "do it"}}],
            },
        },
    )
    res = LogRow(
        501,
        "jsonl",
        "user",
        orjson.dumps({}),
        "2026-01-02T00:00:00.000Z",
        SID,
        f"-p/{SID}.jsonl",
        0,
        100,
        {
            "type": "user",
            "sessionId": SID,
            "timestamp": "2026-01-01T00:00:59.000Z",
            "toolUseResult": {"status": "completed", "agentId": AG},
            "message": {"content": [{"type": "tool_result", "tool_use_id": "tuS", "content": "done"}]},
        },
    )
    limit = reply(3, "Limit reached", model="<synthetic>", isApiErrorMessage=True, error="rate_limit")
    assert outcome([spawn, prompt(1), tool_use(2), limit, res]) == ("completed", None)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"real corpus not found at {CORPUS}")
def test_real_rate_limited_subagent() -> None:
    """corpus/…/-Users-user-rcconsultech-task-api-benchmark-v0-2/agent-4ed9b522.jsonl line 59."""
    origin = "-Users-user-rcconsultech-task-api-benchmark-v0-2/agent-4ed9b522.jsonl"
    data = (CORPUS / origin).read_bytes()
    lines, _ = split_lines(data)
    rows = []
    for i, ln in enumerate(lines, start=1):
        r = line_row(
            ln,
            origin=origin,
            origin_hash=short_hash(origin.encode()),
            gen=0,
            received_at="2026-01-02T00:00:00.000Z",
            path_session=path_info(origin).session_id,
        )
        rows.append(
            LogRow(i, r.source, r.event_type, r.payload, r.received_at, r.session_id, origin, 0, ln.offset, r.obj)
        )
    sid = rows[0].session_id
    assert sid is not None
    m = Model()
    m.apply(fold_log(sid, rows, Ctx())[1])
    assert m.agent("4ed9b522").status == "error" and m.agent("4ed9b522").outcome_cause == "concurrency_limit"
