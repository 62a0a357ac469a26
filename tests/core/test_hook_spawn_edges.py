"""Spawn edges from hooks (SPEC §4.3): a Task/Agent PostToolUse names its child in
``tool_response.agentId``; hooks and transcripts describing one spawn converge on one edge."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core.folding import Incremental
from tests.core.projector_support import Model, hook_row

HOOKS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "hooks"
SID = "66666666-6666-4666-8666-666666666666"
ORIGIN = "-home-u-h/" + SID + ".jsonl"


def hook(i: int, name: str, sec: int, **body: object) -> LogRow:
    return hook_row(SID, i, name, f"2026-01-01T00:00:{sec:02d}.000Z", **body)


def line(i: int, obj: dict[str, Any]) -> LogRow:
    payload = orjson.dumps({"sessionId": SID, "cwd": "/h", **obj})
    return LogRow(i, "jsonl", str(obj["type"]), payload, "2026-03-01T00:00:00.000Z", SID, ORIGIN, 0, i * 1000)


def project(rows: list[LogRow], sid: str = SID) -> Model:
    m = Model()
    m.apply(fold_log(sid, rows, Ctx())[1])
    return m


def edges(m: Model) -> dict[str, tuple[Any, ...]]:
    """child -> (parent, source, created_at, tool_use_id)"""
    return {k[1]: (v[2], v[4], v[7], v[8]) for k, v in m.tables["edges"].items()}


def real_rows(src: str, prefix: str) -> tuple[str, list[LogRow]]:
    """The session id starting with ``prefix`` and its real hook deliveries, a second apart."""
    out: list[LogRow] = []
    sid = ""
    for f in sorted((HOOKS / src).glob("*.jsonl")):
        for raw in f.read_bytes().splitlines():
            o = json.loads(raw)  # tolerates the corpus's lone surrogate (FORMATS.md §6)
            if o.get("session_id", "").startswith(prefix):
                sid = o["session_id"]
                n = len(out)
                ts = f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z"
                out.append(LogRow(n + 1, "hook", o["hook_event_name"], raw, ts, sid, "hook"))
    return sid, out


@pytest.mark.skipif(not HOOKS.is_dir(), reason=f"{HOOKS} absent")
@pytest.mark.parametrize(
    ("src", "sid", "child", "tuid", "stype", "status"),
    [
        # Task PostToolUse tool_response.agentId; SubagentStart/Stop name the same agent
        ("cka-buddy", "11473b9f", "a282eece383c71f91", "toolu_01CPvjaQoRqo9eduaqmz8SRg", "Explore", "completed"),
        # Agent (≈2.1.119): PreToolUse tool_input.subagent_type and tool_response.agentType
        (
            "ice-hockey-game",
            "0e933e2a",
            "a85d70b493ba1f581",
            "toolu_01J3ZWEpjYE5GUWvDEpELTJu",
            "claude-code-guide",
            "completed",
        ),
        # background run: status async_launched, isAsync true
        ("cka-buddy", "1577d3a9", "af4a5e4c13f90b637", "toolu_01QxwWGU58NW7KPyynyLJ5S5", "Explore", None),
    ],
)
def test_real_hook_only_sessions_link_subagents_to_their_caller(
    src: str, sid: str, child: str, tuid: str, stype: str, status: str | None
) -> None:
    sid, rows = real_rows(src, sid)
    for order in (rows, rows[::-1]):
        m = project(order, sid)
        e = edges(m)
        assert e[child][:2] == (sid, "tool_use") and e[child][3] == tuid
        a = m.agent(child)
        assert a.parent_agent_id == sid and a.subagent_type == stype
        if status is not None:
            assert a.status == status
    assert m.agent(sid).type == "main"


def _spawn_hooks(agent_id: str | None = None) -> list[LogRow]:
    inside = {"agent_id": agent_id, "agent_type": "general-purpose"} if agent_id else {}
    inp = {"description": "look", "prompt": "look around", "subagent_type": "Explore"}
    return [
        hook(1, "PreToolUse", 10, tool_name="Agent", tool_use_id="toolu_S", tool_input=inp, **inside),
        hook(2, "SubagentStart", 11, agent_id="achild", agent_type="Explore"),
        hook(3, "SubagentStop", 20, agent_id="achild", agent_type="Explore"),
        hook(
            4,
            "PostToolUse",
            21,
            tool_name="Agent",
            tool_use_id="toolu_S",
            tool_input=inp,
            tool_response={"status": "completed", "agentId": "achild", "agentType": "Explore"},
            **inside,
        ),
    ]


def test_hook_spawn_inside_a_subagent_has_that_subagent_as_parent() -> None:
    rows = [hook(0, "SubagentStart", 5, agent_id="amid", agent_type="general-purpose"), *_spawn_hooks("amid")]
    e = edges(project(rows))
    assert e["achild"] == ("amid", "tool_use", "2026-01-01T00:00:10.000Z", "toolu_S")


def test_no_agent_id_in_any_hook_means_no_edge() -> None:
    # PreToolUse + SubagentStart with no PostToolUse naming the child: nothing ties them (no invented parent)
    rows = _spawn_hooks()[:3]
    m = project(rows)
    assert m.tables["edges"] == {}
    assert m.agent("achild").parent_agent_id is None


def test_async_launch_links_but_does_not_complete() -> None:
    rows = [
        hook(1, "SubagentStart", 11, agent_id="abg", agent_type="Explore"),
        hook(
            2,
            "PostToolUse",
            12,
            tool_name="Task",
            tool_use_id="toolu_B",
            tool_input={"subagent_type": "Explore", "run_in_background": True},
            tool_response={"isAsync": True, "status": "async_launched", "agentId": "abg"},
        ),
    ]
    m = project(rows)
    assert edges(m)["abg"][:2] == (SID, "tool_use")
    assert m.agent("abg").status == "working"


TRANSCRIPT = [
    {
        "type": "assistant",
        "uuid": "u1",
        "timestamp": "2026-01-01T00:00:09.000Z",
        "message": {
            "id": "msg_1",
            "model": "claude-opus-4-6",
            "usage": {"input_tokens": 1, "output_tokens": 2},
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_S",
                    "name": "Agent",
                    "input": {"prompt": "look around", "description": "look"},
                }
            ],
        },
    },
    {
        "type": "user",
        "uuid": "u2",
        "timestamp": "2026-01-01T00:00:19.000Z",
        "toolUseResult": {"status": "completed", "agentId": "achild"},
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_S", "content": "ok"}]},
    },
]


def test_hooks_and_transcript_converge_on_one_edge_in_any_order_and_batching() -> None:
    hooks = _spawn_hooks()
    lines = [line(10 + i, o) for i, o in enumerate(TRANSCRIPT)]
    rows = hooks + lines
    whole = project(rows).tables
    e = {k[1]: (v[2], v[4], v[7], v[8]) for k, v in whole["edges"].items()}
    # the transcript's record time wins; the type, absent from this block's input, comes from the hook's
    assert e == {"achild": (SID, "tool_use", "2026-01-01T00:00:09.000Z", "toolu_S")}
    assert (
        whole["agents"][(SID, "achild")].subagent_type == "Explore"
        and whole["agents"][(SID, "achild")].parent_agent_id == SID
    )
    rnd = random.Random(7)
    for _ in range(200):
        order = rows[:]
        rnd.shuffle(order)
        cuts = sorted(rnd.sample(range(len(order) + 1), rnd.randint(0, 3)))
        m = Model()
        inc = Incremental(SID)
        prev = 0
        for c in [*cuts, len(order)]:
            ch = inc(order[prev:c])
            m.apply(ch)
            prev = c
        assert m.tables == whole
    # hooks alone: the same single edge, stamped with the first receipt
    assert edges(project(hooks)) == {"achild": (SID, "tool_use", "2026-01-01T00:00:10.000Z", "toolu_S")}


def test_a_spawn_result_naming_its_own_caller_does_not_orphan_it() -> None:
    # a subagent's own Task call whose result names the subagent itself (a copy of its spawn's
    # result, or a resumed run) once won the link by its later time: the subagent's real parent
    # edge was dropped and it showed as an orphan. An agent cannot have spawned itself.
    task = {"tool_name": "Task", "tool_input": {"subagent_type": "Explore", "description": "d", "prompt": "p"}}
    rows = [
        hook(1, "PreToolUse", 1, tool_use_id="tu_main", **task),
        hook(
            2, "PostToolUse", 5, tool_use_id="tu_main", tool_response={"agentId": "ax1", "status": "completed"}, **task
        ),
        hook(3, "PreToolUse", 2, agent_id="ax1", tool_use_id="tu_self", **task),
        hook(4, "PostToolUse", 3, agent_id="ax1", tool_use_id="tu_self", tool_response={"agentId": "ax1"}, **task),
    ]
    for order in (rows, rows[::-1]):
        m = project(order)
        assert edges(m) == {"ax1": (SID, "tool_use", "2026-01-01T00:00:01.000Z", "tu_main")}
        inc, one = Incremental(SID), Model()
        for r in order:
            one.apply(inc([r]))
        assert one.tables == m.tables
