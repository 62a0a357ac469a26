"""Agent teams: a teammate is an agent of kind ``teammate`` under the lead session, with its own
tokens and cost, when its spawn named a team (``team_name``, 2.1.4x) or a TeammateIdle /
TaskCreated / TaskCompleted hook's ``teammate_name`` names it (its ``name``, from the spawn input
or its ``.meta.json``: 2.1.332). A named agent no team evidence names stays a subagent; a
teammate name that names no agent creates none. Any order gives the same rows."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core.projector_support import Model, hook_row, tree_rows

SID = "7ea70000-0000-4000-8000-000000000001"
MODEL = "claude-sonnet-4-5-20250929"


def _t(s: int) -> str:
    return f"2026-12-01T10:00:{s:02d}.000Z"


def _files(root: Path, spawn_input: dict[str, Any], meta: dict[str, Any] | None = None) -> list[LogRow]:
    d = root / "-home-u-team"
    sub = d / SID / "subagents"
    sub.mkdir(parents=True)
    main = [
        {
            "type": "user",
            "sessionId": SID,
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": _t(1),
            "message": {"role": "user", "content": "make a team"},
        },
        {
            "type": "assistant",
            "sessionId": SID,
            "uuid": "u2",
            "timestamp": _t(2),
            "message": {
                "id": "m1",
                "role": "assistant",
                "model": MODEL,
                "usage": {"input_tokens": 10, "output_tokens": 1},
                "content": [{"type": "tool_use", "id": "toolu_t", "name": "Agent", "input": spawn_input}],
            },
        },
        {
            "type": "user",
            "sessionId": SID,
            "uuid": "u3",
            "timestamp": _t(3),
            "toolUseResult": {"status": "async_launched", "isAsync": True, "agentId": "a1"},
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_t", "content": "ok"}],
            },
        },
    ]
    mate = [
        {
            "type": "user",
            "sessionId": SID,
            "agentId": "a1",
            "isSidechain": True,
            "uuid": "s1",
            "parentUuid": None,
            "timestamp": _t(4),
            "message": {"role": "user", "content": spawn_input["prompt"]},
        },
        {
            "type": "assistant",
            "sessionId": SID,
            "agentId": "a1",
            "isSidechain": True,
            "uuid": "s2",
            "timestamp": _t(5),
            "message": {
                "id": "m2",
                "role": "assistant",
                "model": MODEL,
                "usage": {"input_tokens": 100, "output_tokens": 20},
                "content": [{"type": "text", "text": "done"}],
            },
        },
    ]
    (d / f"{SID}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in main))
    (sub / "agent-a1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mate))
    if meta is not None:
        (sub / "agent-a1.meta.json").write_text(json.dumps(meta))
    return [dataclasses.replace(r, received_at="2026-12-02T00:00:00.000Z") for r in tree_rows(root)]


def _agent(rows: list[LogRow]) -> Any:
    m = Model()
    m.apply(fold_log(SID, rows, Ctx())[1])
    return m.tables["agents"].get((SID, "a1")), m


IDLE = hook_row(SID, 10**6, "TeammateIdle", "2026-12-01T10:01:00.000Z", teammate_name="alice", team_name="default")


def test_a_spawn_that_names_a_team_is_a_teammate_with_its_own_usage(tmp_path: Path) -> None:
    rows = _files(tmp_path, {"prompt": "research", "description": "r", "team_name": "crew", "name": "alice"})
    a, m = _agent(rows)
    assert (a.type, a.name, a.parent_agent_id) == ("teammate", "alice", SID)
    own = [t for t in m.tables["tokens"].values() if t.agent_id == "a1"]
    assert [(t.input, t.output) for t in own] == [(100, 20)]


def test_a_named_agent_is_a_teammate_once_a_teammate_hook_names_it_in_either_order(tmp_path: Path) -> None:
    rows = _files(
        tmp_path, {"prompt": "research", "description": "r"}, {"agentType": "general-purpose", "name": "alice"}
    )
    assert _agent(rows)[0].type == "subagent"  # a name alone: an ordinary background agent
    for order in ([*rows, IDLE], [IDLE, *rows]):
        a, _ = _agent(order)
        assert (a.type, a.name) == ("teammate", "alice")


def test_a_teammate_name_that_names_no_agent_creates_none(tmp_path: Path) -> None:
    rows = _files(tmp_path, {"prompt": "research", "description": "r", "name": "bob"})
    a, m = _agent([*rows, IDLE])
    assert a.type == "subagent" and a.name == "bob"
    assert {k[1] for k in m.tables["agents"]} == {SID, "a1"}
