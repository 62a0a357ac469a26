"""How sessions really end (SPEC §4.2 "At SessionEnd"): status is a function of the evidence set.

SessionEnd completes the main agent. A subagent with no stop evidence at all (no SubagentStop, no
spawn ``tool_result``) did not finish: ``error`` / ``terminated_early``. Stop evidence anywhere in
the log, logged before or after SessionEnd, makes it ``completed``. Every permutation of the hooks,
folded one row at a time or all at once, and of transcript lines against hooks, gives one answer.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core.folding import Incremental
from tests.core.projector_support import Model, hook_row

SID = "5e5e5e5e-0000-4000-8000-000000000001"
SUB = "a5b6c7d"
MAIN = f"-w-p/{SID}.jsonl"
SUBFILE = f"-w-p/{SID}/subagents/agent-{SUB}.jsonl"


def hook(i: int, name: str, **body: Any) -> LogRow:
    return hook_row(SID, 100 + i, name, f"2026-01-01T00:01:{i:02}.000Z", cwd="/w/p", **body)


def line(i: int, origin: str, obj: dict[str, Any]) -> LogRow:
    obj = {"sessionId": SID, "uuid": f"u{i}", "timestamp": f"2026-01-01T00:00:{i:02}.000Z", **obj}
    return LogRow(i, "jsonl", str(obj["type"]), orjson.dumps(obj), "2026-03-01T00:00:00.000Z", SID, origin, 0, i)


START = hook(1, "SubagentStart", agent_id=SUB, agent_type="Explore")
STOP = hook(2, "SubagentStop", agent_id=SUB, agent_type="Explore")
END = hook(3, "SessionEnd", reason="other")
PROMPT = line(1, MAIN, {"type": "user", "message": {"role": "user", "content": "go"}})


def statuses(rows: list[LogRow], *, one_by_one: bool) -> dict[str, tuple[Any, ...]]:
    """agent id -> (type, status, outcome_cause), folded one row per call or in one call."""
    m = Model()
    if one_by_one:
        inc = Incremental(SID)
        for r in rows:
            ch = inc([r])
            m.apply(ch)
    else:
        m.apply(fold_log(SID, rows, Ctx())[1])
    return {a: (r.type, r.status, r.outcome_cause) for (_, a), r in m.tables["agents"].items()}


def all_orders(rows: list[LogRow]) -> set[tuple[tuple[str, tuple[Any, ...]], ...]]:
    """The distinct final agent rows over every permutation and both batchings."""
    out = set()
    for perm in itertools.permutations(rows):
        for one in (True, False):
            out.add(tuple(sorted(statuses(list(perm), one_by_one=one).items())))
    return out


def test_start_then_end_without_stop_is_terminated_early_in_every_order() -> None:
    got = all_orders([PROMPT, START, END])
    assert got == {((SID, ("main", "completed", None)), (SUB, ("subagent", "error", "terminated_early")))}


def test_stop_in_any_position_completes_the_subagent() -> None:
    # all 24 orders of the three hooks and a transcript line: a SubagentStop logged after the
    # SessionEnd still makes it completed
    got = all_orders([PROMPT, START, STOP, END])
    assert got == {((SID, ("main", "completed", None)), (SUB, ("subagent", "completed", None)))}


def test_without_session_end_the_subagent_is_still_working() -> None:
    assert all_orders([PROMPT, START]) == {((SID, ("main", "working", None)), (SUB, ("subagent", "working", None)))}


def test_stop_without_start_creates_no_agent() -> None:
    got = all_orders([PROMPT, STOP, END])
    assert got == {((SID, ("main", "completed", None)),)}


SPAWN = line(
    2,
    MAIN,
    {
        "type": "assistant",
        "message": {
            "id": "msg_spawn",
            "model": "m",
            "content": [{"type": "tool_use", "id": "toolu_S", "name": "Task", "input": {"prompt": "look"}}],
        },
    },
)
SUB_PROMPT = line(3, SUBFILE, {"type": "user", "agentId": SUB, "isSidechain": True, "parentUuid": None,
                               "message": {"role": "user", "content": "look"}})  # fmt: skip
SUB_TOOL = line(
    4,
    SUBFILE,
    {
        "type": "assistant",
        "agentId": SUB,
        "isSidechain": True,
        "message": {"id": "msg_sub", "model": "m", "content": [{"type": "tool_use", "id": "toolu_B", "name": "Bash"}]},
    },
)
SUB_REPLY = line(
    5,
    SUBFILE,
    {
        "type": "assistant",
        "agentId": SUB,
        "isSidechain": True,
        "message": {"id": "msg_sub2", "model": "m", "content": [{"type": "text", "text": "done"}]},
    },
)
RESULT = line(
    6,
    MAIN,
    {
        "type": "user",
        "toolUseResult": {"agentId": SUB, "status": "completed"},
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_S", "content": "ok"}]},
    },
)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        # the subagent's transcript stops mid-run (a tool call), no stop of any kind: killed
        ([SPAWN, SUB_PROMPT, SUB_TOOL, START, END], ("error", "terminated_early")),
        # the spawn's tool_result came back: completed, whichever source came first
        ([SPAWN, SUB_PROMPT, SUB_TOOL, RESULT, END], ("completed", None)),
        # SubagentStop (a hook) against a transcript that stops mid-run
        ([SPAWN, SUB_PROMPT, SUB_TOOL, STOP, END], ("completed", None)),
        # no stop hook, but the run's own transcript ends on its final reply
        ([SPAWN, SUB_PROMPT, SUB_TOOL, SUB_REPLY, END], ("completed", None)),
    ],
)
def test_transcript_against_hooks_in_every_order(rows: list[LogRow], expected: tuple[str, str | None]) -> None:
    got = all_orders(rows)
    assert len(got) == 1
    final = dict(next(iter(got)))
    assert final[SUB][1:] == expected
    assert final[SID] == ("main", "completed", None)


def session_rows(rows: list[LogRow]) -> set[tuple[Any, ...]]:
    """(status, end_reason) of the session over every order, folded one row per call and at once."""
    out = set()
    for perm in itertools.permutations(rows):
        for one in (True, False):
            m = Model()
            if one:
                inc = Incremental(SID)
                for r in perm:
                    m.apply(inc([r]))
            else:
                m.apply(fold_log(SID, list(perm), Ctx())[1])
            (s,) = m.tables["sessions"].values()
            out.add((s.status, s.end_reason))
    return out


def test_a_resumed_session_is_no_longer_ended() -> None:
    # a resume keeps the session id (corpus/hooks/task-patterns/SessionStart.jsonl); one SessionEnd
    # used to leave the session `completed` through every later prompt and tool call
    started = hook(1, "SessionStart", source="startup")
    ended = hook(4, "SessionEnd", reason="prompt_input_exit")
    resumed = hook(6, "SessionStart", source="resume")
    prompt = hook(7, "UserPromptSubmit", prompt="more")
    assert session_rows([started, ended]) == {("completed", "prompt_input_exit")}
    assert session_rows([started, ended, resumed, prompt]) == {("working", None)}
    # ended again after the resume: completed, with the newest reason
    again = hook(9, "SessionEnd", reason="clear")
    assert session_rows([started, ended, resumed, prompt, again]) == {("completed", "clear")}


def test_a_resume_does_not_revive_a_subagent_the_earlier_end_terminated() -> None:
    resumed = hook(6, "SessionStart", source="resume")
    got = all_orders([PROMPT, START, END, resumed])
    assert got == {((SID, ("main", "working", None)), (SUB, ("subagent", "error", "terminated_early")))}
