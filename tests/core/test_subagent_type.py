"""agents.subagent_type precedence (SPEC §4.2): spawn input, else a hook's agent_type, else the
``.meta.json`` sidecar's agentType, whatever the order the evidence arrives in."""

from __future__ import annotations

import random

import orjson

from ingestd.core.records import LogRow
from tests.core.folding import Incremental
from tests.core.projector_support import Model, hook_row

SID = "99999999-9999-4999-8999-999999999999"
DIR = f"-home-u-t/{SID}/subagents"


def sub_line(i: int, aid: str) -> LogRow:
    obj = {
        "type": "user",
        "sessionId": SID,
        "agentId": aid,
        "isSidechain": True,
        "parentUuid": None,
        "uuid": f"r{i}",
        "timestamp": f"2026-01-01T00:00:0{i}.000Z",
        "message": {"role": "user", "content": f"task {aid}"},
    }
    return LogRow(
        i, "jsonl", "user", orjson.dumps(obj), "2026-03-01T00:00:00.000Z", SID, f"{DIR}/agent-{aid}.jsonl", 0, 0
    )


def meta(i: int, aid: str, at: str) -> LogRow:
    payload = orjson.dumps({"agentType": at})
    return LogRow(i, "jsonl", "meta", payload, "2026-03-01T00:00:00.000Z", SID, f"{DIR}/agent-{aid}.meta.json", 0, 0)


def hook(i: int, name: str, **body: object) -> LogRow:
    return hook_row(SID, i, name, f"2026-01-01T00:01:0{i}.000Z", **body)


SPAWN = {
    "type": "assistant",
    "sessionId": SID,
    "uuid": "m1",
    "timestamp": "2026-01-01T00:00:00.500Z",
    "message": {
        "id": "msg_m1",
        "model": "m",
        "content": [{"type": "tool_use", "id": "toolu_P", "name": "Task", "input": {"subagent_type": "Plan"}}],
    },
}
RESULT = {
    "type": "user",
    "sessionId": SID,
    "uuid": "m2",
    "timestamp": "2026-01-01T00:00:09.000Z",
    "toolUseResult": {"status": "completed", "agentId": "aspawned"},
    "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_P", "content": "ok"}]},
}


def main_line(i: int, obj: dict[str, object]) -> LogRow:
    return LogRow(
        i,
        "jsonl",
        str(obj["type"]),
        orjson.dumps(obj),
        "2026-03-01T00:00:00.000Z",
        SID,
        f"-home-u-t/{SID}.jsonl",
        0,
        i * 100,
    )


ROWS = [
    # spawned: spawn input "Plan" beats the hook's and the sidecar's
    main_line(1, SPAWN),
    main_line(2, RESULT),
    sub_line(3, "aspawned"),
    meta(4, "aspawned", "sidecar-type"),
    hook(5, "SubagentStart", agent_id="aspawned", agent_type="hook-type"),
    # no spawn: the hook's agent_type beats the sidecar
    sub_line(6, "ahooked"),
    meta(7, "ahooked", "sidecar-type"),
    hook(8, "SubagentStop", agent_id="ahooked", agent_type="Explore"),
    # only a sidecar
    sub_line(9, "asidecar"),
    meta(10, "asidecar", "sidecar-type"),
]


def test_spawn_input_then_hook_then_sidecar_in_any_order() -> None:
    seen = set()
    rnd = random.Random(3)
    for _ in range(300):
        order = ROWS[:]
        rnd.shuffle(order)
        m = Model()
        inc = Incremental(SID)
        for r in order:
            ch = inc([r])
            m.apply(ch)
        a = m.agents_by_id()
        seen.add((a["aspawned"].subagent_type, a["ahooked"].subagent_type, a["asidecar"].subagent_type))
    assert seen == {("Plan", "Explore", "sidecar-type")}
