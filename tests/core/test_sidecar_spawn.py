"""The subagent's own ``.meta.json`` names its spawn (SPEC §4.3; ``ingestd.core.transcript.sidecar``):
its ``toolUseId`` is the strongest link, its ``agentType`` / ``description`` / ``name`` fill what no
spawn input says, and its ``"finished": true`` rewrite is stop evidence; in any order."""

from __future__ import annotations

import itertools
import json
from typing import Any

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core import async_support as a
from tests.core.projector_support import Model

MAIN = a.SID


def project(rows: list[LogRow]) -> Model:
    m = Model()
    m.apply(fold_log(a.SID, rows, Ctx())[1])
    return m


def _spawn(i: int, tuid: str, prompt: str, ts: str, desc: str | None = None) -> LogRow:
    inp: dict[str, Any] = {"prompt": prompt, "subagent_type": "general-purpose"}
    if desc is not None:
        inp["description"] = desc
    block = {"type": "tool_use", "id": tuid, "name": "Agent", "input": inp}
    rec = {"type": "assistant", "sessionId": a.SID, "timestamp": ts, "uuid": f"u{i}",
           "message": {"id": f"m{i}", "model": "m", "role": "assistant", "content": [block]}}  # fmt: skip
    return a.line(i, rec)


def _agent_first(i: int, aid: str, prompt: str, ts: str) -> LogRow:
    """The subagent's own first record (its file), prompt ``prompt``."""
    rec = {"type": "user", "sessionId": a.SID, "agentId": aid, "isSidechain": True, "parentUuid": None,
           "timestamp": ts, "uuid": f"s{i}", "message": {"role": "user", "content": prompt}}  # fmt: skip
    return a.line(i, rec, f"-home-user-proj/{a.SID}/subagents/agent-{aid}.jsonl")


def _meta(i: int, aid: str, **obj: object) -> LogRow:
    row = a.meta(i, {"agentType": "general-purpose", **obj})
    return LogRow(i, row.source, row.event_type, row.payload, row.received_at, a.SID,
                  f"-home-user-proj/{a.SID}/subagents/agent-{aid}.meta.json", 0, 0)  # fmt: skip


def test_two_parallel_spawns_with_one_prompt_each_get_their_own_agent() -> None:
    """Without the sidecar both agents match the later spawn by prompt; with it each has its own."""
    base = [
        _spawn(1, "toolu_A", "look", "2026-12-01T10:00:00.000Z", "first"),
        _spawn(2, "toolu_B", "look", "2026-12-01T10:00:01.000Z", "second"),
        _agent_first(3, "aaa", "look", "2026-12-01T10:00:02.000Z"),
        _agent_first(4, "bbb", "look", "2026-12-01T10:00:03.000Z"),
    ]
    before = project(base)
    assert before.agent("aaa").description == before.agent("bbb").description == "second"
    metas = [_meta(5, "aaa", toolUseId="toolu_A"), _meta(6, "bbb", toolUseId="toolu_B")]
    for rows in (base + metas, metas + base, list(reversed(base + metas))):
        m = project(rows)
        assert m.agent("aaa").description == "first" and m.agent("bbb").description == "second"
        edges = m.tables["edges"]
        assert edges[(a.SID, "aaa")].source == edges[(a.SID, "bbb")].source == "sidecar"
        assert (edges[(a.SID, "aaa")].tool_use_id, edges[(a.SID, "bbb")].tool_use_id) == ("toolu_A", "toolu_B")


def test_a_prompt_not_byte_equal_to_the_spawns_is_no_orphan_with_a_sidecar() -> None:
    rows = [
        _spawn(1, "toolu_A", "look at x", "2026-12-01T10:00:00.000Z"),
        _agent_first(2, "aaa", "look at x\n\n(expanded by the harness)", "2026-12-01T10:00:02.000Z"),
    ]
    assert project(rows).agent("aaa").parent_agent_id is None
    m = project([*rows, _meta(3, "aaa", toolUseId="toolu_A")])
    assert m.agent("aaa").parent_agent_id == MAIN


def test_the_sidecar_beats_the_spawn_result_naming_another_child() -> None:
    """Two pieces of evidence disagree on the child of one call: the agent's own file is believed."""
    result = {"type": "user", "sessionId": a.SID, "timestamp": "2026-12-01T10:00:05.000Z", "uuid": "r1",
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_A",
                                                       "content": "done"}]},
              "toolUseResult": {"agentId": "zzz", "status": "completed"}}  # fmt: skip
    rows = [
        _spawn(1, "toolu_A", "p", "2026-12-01T10:00:00.000Z"),
        _agent_first(2, "aaa", "p", "2026-12-01T10:00:02.000Z"),
        a.line(3, result),
        _meta(4, "aaa", toolUseId="toolu_A"),
    ]
    for perm in itertools.permutations(rows):
        m = project(list(perm))
        assert m.tables["edges"][(a.SID, "aaa")].source == "sidecar"
        assert (a.SID, "zzz") not in m.tables["edges"]


def test_the_real_sidecar_names_type_description_and_spawn_and_finished_ends_the_agent() -> None:
    launch = [r for r in a.hooks() if r.event_type in ("PreToolUse", "PostToolUse") and b"Agent" in r.payload]
    m = project([*launch, a.meta(50)])
    row = m.agent(a.CHILD)
    assert (row.subagent_type, row.description, row.status) == ("general-purpose", "Read a file", "completed")
    # the spawn-time sidecar, before the rewrite: no end yet
    written = json.loads((a.AGENTS / f"agent-{a.CHILD}.meta.json").read_text())
    early = {k: v for k, v in written.items() if k != "finished"}
    assert project([*launch, a.meta(50, early)]).agent(a.CHILD).status == "working"


def test_a_named_agent_carries_its_name() -> None:
    rows = [
        _spawn(1, "toolu_A", "p", "2026-12-01T10:00:00.000Z"),
        _meta(2, "aaa", toolUseId="toolu_A", name="alice", description="Take notes"),
    ]
    assert project(rows).agent("aaa").name == "alice"
