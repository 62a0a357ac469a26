"""tool_calls.agent_id converges on the named agent whichever source arrives first (SPEC §4.5)."""

from __future__ import annotations

import itertools

import orjson

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core.folding import Incremental
from tests.core.projector_support import Model, hook_row

# a session id that sorts before the subagent's id: a plain min() join would pick the main agent
SID = "00000000-0000-4000-8000-000000000000"
SUB = "a1b2c3d"
ORIGIN = f"-home-u-p/{SID}/subagents/agent-{SUB}.jsonl"


def hook(i: int, name: str, **body: object) -> LogRow:
    return hook_row(SID, i, name, f"2026-01-01T00:00:0{i}.000Z", **body)


TOOL_USE = {
    "type": "assistant",
    "sessionId": SID,
    "agentId": SUB,
    "isSidechain": True,
    "uuid": "u1",
    "timestamp": "2026-01-01T00:00:00.500Z",
    "message": {"id": "m1", "model": "m", "content": [{"type": "tool_use", "id": "toolu_R", "name": "Read"}]},
}
ROWS = [
    LogRow(9, "jsonl", "assistant", orjson.dumps(TOOL_USE), "2026-03-01T00:00:00.000Z", SID, ORIGIN, 0, 0),
    # before 2.1.69 a subagent's tool hooks carried no agent_id (CL 2.1.69): the main agent is only a default
    hook(1, "PreToolUse", tool_name="Read", tool_use_id="toolu_R"),
    hook(2, "PostToolUse", tool_name="Read", tool_use_id="toolu_R", tool_response={}),
]


def test_a_hook_without_agent_id_never_overrides_the_transcripts_agent() -> None:
    for order in itertools.permutations(ROWS):
        m = Model()
        inc = Incremental(SID)
        for r in order:  # one row per batch: the hardest incremental order
            ch = inc([r])
            m.apply(ch)
        row = m.tables["tools"][(SID, "toolu_R")]
        assert row[2:7] == (SUB, "Read", "2026-01-01T00:00:00.500Z", "2026-01-01T00:00:02.000Z", "completed")


def test_hooks_alone_attribute_to_the_main_agent_or_the_named_subagent() -> None:
    m = Model()
    m.apply(fold_log(SID, ROWS[1:], Ctx())[1])
    assert m.tables["tools"][(SID, "toolu_R")].agent_id == SID
    m = Model()
    m.apply(fold_log(SID, [*ROWS[1:], hook(3, "PostToolUse", tool_use_id="toolu_R", agent_id="zz9")], Ctx())[1])
    assert m.tables["tools"][(SID, "toolu_R")].agent_id == "zz9"
