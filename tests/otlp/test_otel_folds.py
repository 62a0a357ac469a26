"""Claude Code's telemetry folded into what exists: ``subagent_completed`` ends a subagent no other
evidence ends, a ``compaction`` event is the transcript's compaction when a boundary explains it
(never a second one) and a compaction of its own when none does, in any order, replay-identical.

The agent's run is the ``spawn`` scenario of a real Claude Code 2.1.332 (``tests.core.async_support``)
with its stop evidence taken away; the events carry the attributes the 2.1.332 bundle sends
(``subagent_completed``: agent_type, is_async, total_tokens, total_tool_uses, duration_ms, model,
agent_id, parent_agent_id; ``compaction``: trigger, success, duration_ms, pre_tokens, post_tokens,
all strings but the sequence)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson

from ingestd.core import otlp
from ingestd.core.otelfold import BOUNDARY_PREFIX
from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow, NewLogRow
from ingestd.core.touch import Ctx
from ingestd.projection.replay import replay
from ingestd.store.writer import apply_batch
from tests.core import async_support as spawn
from tests.core.projector_support import Model
from tests.ingest.support import new_db
from tests.otlp.bodies import event_attrs, json_logs, json_record

BOUNDARY = "b0b0b0b0-1111-4222-8333-444444444444"
T_BOUNDARY = "2026-12-02T10:00:00.000Z"
T_EVENT_NS = 1796205600_500_000_000  # 2026-12-02T10:00:00.500Z: half a second after the boundary


def otel(start: int, *records: dict[str, Any]) -> list[LogRow]:
    body = json_logs(list(records))
    parsed = otlp.parse_request(otlp.LOGS, orjson.loads(body), body)
    assert isinstance(parsed, otlp.Export)
    return [r.logged(start + i) for i, r in enumerate(parsed.rows_at(spawn.READ_AT))]


def completed(start: int) -> list[LogRow]:
    attrs = event_attrs(
        "subagent_completed",
        seq=40,
        session=spawn.SID,
        agent_type="general-purpose",
        is_built_in="true",
        is_async="true",
        total_tokens="1520",
        total_tool_uses="1",
        duration_ms="2300",
        model="claude-sonnet-4-5-20250929",
        final_model="claude-sonnet-4-5-20250929",
        model_swapped="false",
        agent_id=spawn.CHILD,
        parent_agent_id=spawn.SID,
    )
    return otel(start, json_record(attrs, T_EVENT_NS))


def without_stop_evidence() -> list[LogRow]:
    """The scenario with nothing that ends the agent: no SubagentStop, no notices, a sidecar
    without ``finished`` (its spawn-time form)."""
    rows = [r for r in spawn.hooks(1) if r.event_type != "SubagentStop" and b"task-notification" not in r.payload]
    n = 100
    rows.append(spawn.line(n, spawn.records()[0]))  # the async_launched result: ends nothing
    sidecar = orjson.loads((spawn.AGENTS / f"agent-{spawn.CHILD}.meta.json").read_bytes())
    del sidecar["finished"]
    rows.append(spawn.meta(n + 1, sidecar))
    return rows


def _fold(rows: list[LogRow]) -> Model:
    m = Model()
    m.apply(fold_log(spawn.SID, sorted(rows, key=lambda r: r.id), Ctx())[1])
    return m


def test_subagent_completed_ends_an_agent_no_other_evidence_ends() -> None:
    rows = without_stop_evidence()
    child = _fold(rows).agent(spawn.CHILD, spawn.SID)
    assert (child.status, child.outcome_cause) == ("error", "terminated_early")
    for order in (rows + completed(500), completed(0) + [_renumbered(r, r.id + 1) for r in rows]):
        got = _fold(order).agent(spawn.CHILD, spawn.SID)
        assert (got.status, got.outcome_cause) == ("completed", None)


def test_subagent_completed_for_an_agent_that_never_ran_creates_none() -> None:
    rows = [
        r
        for r in spawn.hooks(1)
        if r.event_type not in ("SubagentStart", "SubagentStop", "PreToolUse", "PostToolUse", "PostToolBatch")
    ]
    m = _fold(rows + completed(500))
    assert spawn.CHILD not in {a for (_, a) in m.tables["agents"]}


def _renumbered(r: LogRow, new_id: int) -> LogRow:
    return LogRow(
        new_id, r.source, r.event_type, r.payload, r.received_at, r.session_id, r.origin, r.origin_gen, r.origin_offset
    )


def boundary(i: int, pre: int = 152000, trigger: str = "auto") -> LogRow:
    rec = {
        "type": "system",
        "subtype": "compact_boundary",
        "parentUuid": None,
        "logicalParentUuid": "f00dfeed-0000-4000-8000-000000000001",
        "uuid": BOUNDARY,
        "sessionId": spawn.SID,
        "timestamp": T_BOUNDARY,
        "isSidechain": False,
        "content": "Conversation compacted",
        "compactMetadata": {"trigger": trigger, "preTokens": pre},
    }
    return spawn.line(i, rec)


def compaction_event(start: int, pre: int = 152000, seq: int = 41, ns: int = T_EVENT_NS) -> list[LogRow]:
    attrs = event_attrs(
        "compaction",
        seq=seq,
        session=spawn.SID,
        trigger="auto",
        success="true",
        duration_ms="41210",
        pre_tokens=str(pre),
        post_tokens="18400",
    )
    return otel(start, json_record(attrs, ns))


def _compactions(rows: list[LogRow]) -> list[tuple[Any, ...]]:
    return sorted(r[:6] for r in _fold(rows).tables["compactions"].values())


def test_a_compaction_event_a_boundary_explains_is_that_compaction_in_any_order() -> None:
    base = spawn.hooks(1)
    rows = [*base, boundary(200), *compaction_event(300)]
    want = [(spawn.SID, BOUNDARY, spawn.SID, T_BOUNDARY, "auto", 152000)]
    for perm in itertools.permutations([[boundary(200)], compaction_event(300)]):
        assert _compactions([*base, *itertools.chain(*perm)]) == want
    # folded in two steps, the event first: its own row is written, then taken back
    m = Model()
    m.apply(fold_log(spawn.SID, [*base, *compaction_event(300)], Ctx())[1])
    (own,) = m.tables["compactions"].values()
    assert own[1].startswith(BOUNDARY_PREFIX) and own[4:6] == ("auto", 152000)
    m.apply(fold_log(spawn.SID, sorted(rows, key=lambda r: r.id), Ctx())[1])
    assert sorted(r[:6] for r in m.tables["compactions"].values()) == want


def test_a_compaction_only_the_telemetry_shows_is_one_of_its_own() -> None:
    """A boundary of other tokens does not explain it: two compactions, each counted once."""
    rows = [*spawn.hooks(1), boundary(200, pre=90000), *compaction_event(300)]
    got = _compactions(rows)
    assert [r[1] == BOUNDARY for r in got].count(True) == 1 and len(got) == 2
    own = next(r for r in got if r[1] != BOUNDARY)
    assert own[1].startswith(BOUNDARY_PREFIX) and own[2:] == (spawn.SID, "2026-12-02T10:00:00.500Z", "auto", 152000)


def as_new_rows() -> list[NewLogRow]:
    """The agent's run without its stop evidence, its ``subagent_completed``, two compaction events
    (one a boundary explains, logged before it) and the boundary, as rows to log one at a time."""
    rows = [*without_stop_evidence(), *completed(500), *compaction_event(600), *compaction_event(700, pre=5, seq=42)]
    rows.append(boundary(900))
    return [
        NewLogRow(
            f"t:{r.source}:{r.id}",
            r.source,
            r.event_type,
            r.payload,
            r.received_at,
            r.session_id,
            r.origin,
            r.origin_gen,
            r.origin_offset,
        )
        for r in rows
    ]


def test_the_compactions_and_the_agents_end_replay_identically(tmp_path: Path) -> None:
    """Logged one row per batch, the event before the boundary: the live rows equal two replays."""
    db = tmp_path / "r.db"
    conn = new_db(db)
    for r in as_new_rows():
        apply_batch(conn, [r])
    got = sorted(tuple(x) for x in conn.execute("SELECT boundary_id, pre_tokens FROM compactions"))
    assert len(got) == 2 and (BOUNDARY, 152000) in got and any(b.startswith(BOUNDARY_PREFIX) for b, _ in got)
    assert conn.execute("SELECT status FROM agents WHERE id = ?", (spawn.CHILD,)).fetchall() == [("completed",)]
    conn.close()
    assert replay(db).comparison.ok
