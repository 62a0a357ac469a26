"""tool_calls.status from transcript results and hooks, converging in any order (SPEC §4.5)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import orjson
import pytest

from ingestd.core.derive_agents import View
from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core.folding import Incremental
from tests.core.projector_support import Model, hook_row

SID = "12121212-1212-4121-8121-121212121212"
ORIGIN = f"-home-u-s/{SID}.jsonl"


def hook(i: int, name: str, **body: object) -> LogRow:
    body = {"tool_name": "Bash", "tool_use_id": "tu", **body}
    return hook_row(SID, i, name, f"2026-01-01T00:00:0{i}.000Z", **body)


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
    got = {m.tables["tools"][(SID, "tu")].status for m in one_row_a_batch(rows)}
    assert got == {case.removesuffix("_hook")}


# A call without a result whose agent reached a terminal state (or whose session ended) can no
# longer be running: it is derived `interrupted`, ended_at NULL (nothing says when it stopped).
AG = "a5555555"
SUB = f"-home-u-s/{SID}/subagents/agent-{AG}.jsonl"


def sub_rec(i: int, msg: dict[str, object], **kw: object) -> LogRow:
    obj = {
        "type": "assistant",
        "sessionId": SID,
        "agentId": AG,
        "isSidechain": True,
        "uuid": f"s{i}",
        "timestamp": f"2026-01-01T00:00:0{i}.000Z",
        "message": msg,
        **kw,
    }
    return LogRow(i, "jsonl", "assistant", orjson.dumps(obj), "2026-03-01T00:00:00.000Z", SID, SUB, 0, i * 100)


def sub_use(i: int) -> LogRow:
    return sub_rec(i, {"id": f"m{i}", "model": "m", "content": [{"type": "tool_use", "id": f"tu{i}", "name": "Bash"}]})


def rate_limited(i: int) -> LogRow:
    msg = {"id": f"m{i}", "model": "<synthetic>", "content": [{"type": "text", "text": "Limit reached"}]}
    return sub_rec(i, msg, isApiErrorMessage=True, error="rate_limit")


def one_row_a_batch(rows: list[LogRow]) -> Iterator[Model]:
    """The tables after folding ``rows`` one row a batch, the last redelivered, in every order."""
    for order in itertools.permutations([*rows, rows[-1]]):
        m = Model()
        inc = Incremental(SID)
        for r in order:
            m.apply(inc([r]))
        yield m


def every_order(rows: list[LogRow]) -> set[tuple[tuple[object, ...], ...]]:
    """Final tool rows (tool_use_id, ended_at, status) of every order, one row a batch, the last redelivered;
    one batch; and a state folded up to any row then given the rest equals a fold from scratch."""
    got = {tuple(sorted((k[1], v[5], v[6]) for k, v in m.tables["tools"].items())) for m in one_row_a_batch(rows)}
    one = Model()
    one.apply(fold_log(SID, rows, Ctx())[1])
    for n in range(len(rows) + 1):
        fold_in = Incremental(SID)
        inc = Model()
        inc.apply(fold_in(rows[:n]))
        inc.apply(fold_in(rows[n:]))
        assert inc.tables == one.tables  # incremental == from scratch
    got.add(tuple(sorted((k[1], v[5], v[6]) for k, v in one.tables["tools"].items())))
    return got


def test_open_call_is_interrupted_once_the_session_ends() -> None:
    rows = [use(1), hook(2, "PreToolUse", tool_input={}), hook(5, "SessionEnd", reason="other")]
    assert every_order(rows) == {(("tu", None, "interrupted"),)}


def test_a_result_after_the_session_end_still_wins() -> None:
    rows = [use(1), hook(5, "SessionEnd", reason="other"), result(4, "ok", False)]
    assert every_order(rows) == {(("tu", "2026-01-01T00:00:05.000Z", "completed"),)}


def test_subagent_stop_interrupts_its_open_calls_not_the_parents() -> None:
    # live: a subagent SubagentStop completed still showed six PreToolUse hooks as running
    rows = [
        hook(1, "PreToolUse", agent_id=AG, tool_use_id="ta"),
        hook(2, "PreToolUse", agent_id=AG, tool_use_id="tb"),
        hook(3, "PreToolUse", tool_use_id="tm"),
        hook(4, "SubagentStop", agent_id=AG, agent_type="Explore"),
    ]
    assert every_order(rows) == {(("ta", None, "interrupted"), ("tb", None, "interrupted"), ("tm", None, "running"))}


def test_subagent_error_interrupts_open_calls_and_a_later_turn_reopens_them() -> None:
    assert every_order([sub_use(2), rate_limited(3)]) == {(("tu2", None, "interrupted"),)}
    # the rate-limit turn is not the newest once a later turn is read: the run goes on, calls reopen
    assert every_order([sub_use(2), rate_limited(3), sub_use(4)]) == {
        (("tu2", None, "running"), ("tu4", None, "running"))
    }


def test_a_watchdog_tick_interrupts_nothing() -> None:
    # the watchdog's `unknown` is not terminal: a quiet call stays running
    tick = LogRow(
        9, "ingestd", "watchdog", b'{"as_of":"2026-01-01T01:00:00.000Z"}', "2026-01-01T01:00:00.000Z", SID, ""
    )
    assert every_order([use(1), hook(2, "PreToolUse"), tick]) == {(("tu", None, "running"),)}


def test_calls_opened_between_two_ends_of_an_agent_are_interrupted_by_the_second() -> None:
    # the agent ends, a later turn reopens it and opens another call, then it ends again: both calls
    # stop running, whichever order the records arrive in (derive's per-agent consistency mark)
    rows = [sub_use(2), rate_limited(3), sub_use(4), rate_limited(5)]
    assert every_order(rows) == {(("tu2", None, "interrupted"), ("tu4", None, "interrupted"))}


def test_a_new_call_does_not_rescan_every_open_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # a daemon fed PreToolUse hooks without results slowed down as they accumulated: each fold
    # asked every open call's agent whether it had stopped (quadratic in a session's open calls)
    inc = Incremental(SID)
    inc([hook(1, "PreToolUse", tool_use_id=f"t{n}") for n in range(500)])
    calls = 0
    stopped = View.stopped

    def counting(self: View, agent: str) -> bool:
        nonlocal calls
        calls += 1
        return stopped(self, agent)

    monkeypatch.setattr(View, "stopped", counting)
    ch = inc([hook(2, "PreToolUse", tool_use_id="t-new")])
    assert [r.tool_use_id for r in ch.tool_calls] == ["t-new"]
    assert calls <= 3
