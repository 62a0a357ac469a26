"""What the hook events of a real Claude Code 2.1.332 say beyond activity, projected
(``ingestd.core.hookfold``): the prompt each tool call and event belongs to, a denied call's reason,
a failed turn's error type, the model switched to, the task list, a compaction's summary, and the
task-notifications that name no agent. Bodies from ``fixtures/claude-2.1.332/hooks`` (changed where
a field the bundle documents did not fire headless)."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core import async_support as a
from tests.core.claude_fixtures import at, deliveries, hook_rows
from tests.core.folding import Incremental
from tests.core.projector_support import Model


def _fold(rows: list[LogRow]) -> Model:
    m = Model()
    m.apply(fold_log(rows[0].session_id or "", rows, Ctx())[1])
    return m


def _both_orders(rows: list[LogRow]) -> Model:
    """The projection of ``rows``, asserted equal to that of ``rows`` reversed."""
    m = _fold(rows)
    assert _fold(rows[::-1]).tables == m.tables
    return m


def test_tool_calls_and_events_carry_the_prompt_they_belong_to() -> None:
    bodies = deliveries("tasks")
    m = _both_orders(hook_rows(bodies))
    prompts = {str(b["tool_use_id"]): b["prompt_id"] for b in bodies if b.get("tool_use_id")}
    assert len(prompts) == 2 and all(prompts.values())
    assert {k[1]: r.prompt_id for k, r in m.tables["tools"].items()} == prompts
    events = sorted(m.tables["events"].values())
    assert [e.prompt_id for e in events] == [b.get("prompt_id") for b in bodies]
    assert events[0].event_type == "SessionStart" and events[0].prompt_id is None  # before the first prompt


def test_a_tool_result_records_prompt_id_names_the_calls_prompt() -> None:
    """The transcript alone (the ``async_launched`` tool_result record's ``promptId``) names the same
    prompt as the hooks' ``prompt_id``."""
    launch = a.records()[0]
    m = _fold([a.line(1, launch)])
    assert m.tables["tools"][(a.SID, a.SPAWN)].prompt_id == launch["promptId"]
    hook = next(b for b in deliveries("spawn") if b.get("tool_use_id") == a.SPAWN)
    assert hook["prompt_id"] == launch["promptId"]


def test_the_tasks_scenario_makes_one_completed_task() -> None:
    bodies = deliveries("tasks")
    names = [b["hook_event_name"] for b in bodies]
    m = _both_orders(hook_rows(bodies))
    sid = str(bodies[0]["session_id"])
    task = m.tables["tasks"][(sid, "1")]
    assert (task.subject, task.description, task.teammate) == ("Write the notes", "Write notes.md", None)
    assert task.status == "completed"
    assert (task.created_at, task.completed_at) == (at(names.index("TaskCreated")), at(names.index("TaskCompleted")))


def test_a_task_created_only_is_pending_and_a_teammates_task_names_it() -> None:
    created = next(b for b in deliveries("tasks") if b["hook_event_name"] == "TaskCreated")
    other = {**created, "task_id": "2", "task_subject": "Review", "teammate_name": "alice"}
    del other["task_description"]
    m = _fold(hook_rows([created, other]))
    sid = str(created["session_id"])
    assert m.tables["tasks"][(sid, "1")].status == "pending"
    two = m.tables["tasks"][(sid, "2")]
    assert (two.subject, two.description, two.teammate, two.status) == ("Review", None, "alice", "pending")


def test_a_task_event_without_an_id_names_no_task() -> None:
    created = next(b for b in deliveries("tasks") if b["hook_event_name"] == "TaskCreated")
    broken = {k: v for k, v in created.items() if k != "task_id"}
    m = _fold(hook_rows([broken, {**created, "task_id": 7}]))
    assert m.tables["tasks"] == {}
    assert len(m.tables["events"]) == 2  # both still events


def test_stop_failure_names_the_sessions_error_type_until_a_later_stop() -> None:
    bodies = deliveries("api_failure")
    sid = str(bodies[0]["session_id"])
    failed = [b for b in bodies if b["hook_event_name"] != "SessionEnd"]
    m = _both_orders(hook_rows(failed))
    assert m.tables["sessions"][sid].error_type == "rate_limit"
    stop = {**failed[-1], "hook_event_name": "Stop", "stop_hook_active": False}
    del stop["error"]
    m = _both_orders(hook_rows([*failed, stop]))
    assert m.tables["sessions"][sid].error_type is None  # the next turn ended well


def test_a_stop_failure_without_an_error_is_unknown_and_a_subagents_is_not_the_sessions() -> None:
    fail = next(b for b in deliveries("api_failure") if b["hook_event_name"] == "StopFailure")
    sid = str(fail["session_id"])
    bare = {k: v for k, v in fail.items() if k != "error"}
    assert _fold(hook_rows([bare])).tables["sessions"][sid].error_type == "unknown"
    sub = {**fail, "agent_id": "a0123456789abcdef", "agent_type": "general-purpose"}
    assert _fold(hook_rows([sub])).tables["sessions"][sid].error_type is None


def test_a_model_switch_is_recorded_on_the_session() -> None:
    bodies = deliveries("sdk_controls")
    sid = str(bodies[0]["session_id"])
    m = _both_orders(hook_rows(bodies))
    assert m.tables["sessions"][sid].switched_to_model == "claude-haiku-4-5-20251001"
    assert _fold(hook_rows(bodies[:1])).tables["sessions"][sid].switched_to_model is None


def test_permission_denied_ends_the_call_denied_with_its_reason() -> None:
    """PermissionDenied did not fire headless (docs/claude-code.md §3): its body is the bundle's
    (``tool_name``, ``tool_input``, ``tool_use_id``, ``reason``) on a real PreToolUse's fields."""
    pre = next(b for b in deliveries("spawn") if b["hook_event_name"] == "PreToolUse")
    denied = {**copy.deepcopy(pre), "hook_event_name": "PermissionDenied", "reason": "Auto mode: not allowed"}
    m = _both_orders(hook_rows([pre, denied]))
    call = m.tables["tools"][(str(pre["session_id"]), str(pre["tool_use_id"]))]
    assert (call.status, call.reason, call.tool_name) == ("denied", "Auto mode: not allowed", "Bash")
    assert call.prompt_id == pre["prompt_id"]


def _notice_with(task: str) -> dict[str, Any]:
    queued = copy.deepcopy(a.records()[1])
    queued["content"] = str(queued["content"]).replace(a.CHILD, task)
    return queued


def test_a_notice_naming_no_agent_is_counted_on_the_session_and_creates_none() -> None:
    stray = _notice_with("b0000000000000000")
    m = _fold([*a.session(), a.line(100, stray)])
    s = m.tables["sessions"][a.SID]
    assert s.unmatched_notices == 1
    assert "b0000000000000000" not in {k[1] for k in m.tables["agents"]}
    assert _fold(a.session()).tables["sessions"][a.SID].unmatched_notices == 0  # its own agent is matched


def test_an_old_notice_without_a_tool_use_id_for_an_unread_agent_is_unmatched() -> None:
    queued = _notice_with("b1111111111111111")
    queued["content"] = a.without_tag(str(queued["content"]), "tool-use-id")
    m = _fold([a.line(1, queued)])
    assert m.tables["sessions"][a.SID].unmatched_notices == 1
    assert m.tables["agents"] == {}


def test_a_compactions_summary_is_the_summary_record_under_its_boundary_in_any_order() -> None:
    """corpus/claude-projects/-home-user-projects-spotter-worktrees-spotter-dov/4d5611e5-….jsonl: the
    ``compact_boundary`` record and the ``isCompactSummary`` user record whose parentUuid it is."""
    sid = "4d5611e5-241a-462a-8d15-5122611a9569"
    common = {"isSidechain": False, "userType": "external", "cwd": "/home/user/p", "sessionId": sid}
    boundary = {
        "parentUuid": None,
        "logicalParentUuid": "459e838f-d7ea-4f7d-94ad-2cb4d227dc77",
        **common,
        "version": "2.1.39",
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "timestamp": "2026-02-12T20:30:28.504Z",
        "uuid": "dd3cc2e6-a191-4331-a0f0-2473e6d7692d",
        "level": "info",
        "compactMetadata": {"trigger": "auto", "preTokens": 170251},
    }
    text = "This session is being continued from a previous conversation that ran out of context."
    summary = {
        "parentUuid": boundary["uuid"],
        **common,
        "type": "user",
        "message": {"role": "user", "content": text},
        "isCompactSummary": True,
        "isVisibleInTranscriptOnly": True,
        "uuid": "6a3c3f6e-0000-4000-8000-000000000001",
        "timestamp": "2026-02-12T20:30:28.510Z",
    }
    origin = f"-home-user-p/{sid}.jsonl"
    rows = [
        LogRow(i + 1, "jsonl", str(o["type"]), orjson.dumps(o), a.READ_AT, sid, origin, 0, i * 1000)
        for i, o in enumerate((boundary, summary))
    ]
    for order in (rows, rows[::-1]):
        m = Model()
        inc = Incremental(sid)
        for r in order:  # one row per fold: the summary may come before its boundary
            m.apply(inc([r]))
        got = m.tables["compactions"][(sid, str(boundary["uuid"]))]
        assert (got.summary, got.pre_tokens, got.trigger) == (text, 170251, "auto")
    assert _fold(rows[1:]).tables["compactions"] == {}  # no boundary read: no compaction
