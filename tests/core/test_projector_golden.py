"""Golden tests of the projector's rules on the hand-made ``fixtures/projects`` tree.

Expected values are written from reading the fixture files (FORMATS.md semantics), not from
the program's output.
"""

from __future__ import annotations

import pytest

from ingestd.core.projector import fold, fold_log, given
from ingestd.core.touch import Ctx
from tests.core.projector_support import Model, by_session, hook_row, tree_rows

S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
S3 = "33333333-3333-4333-8333-333333333333"
S4 = "44444444-4444-4444-8444-444444444444"
BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


@pytest.fixture(scope="module")
def model() -> Model:
    m = Model()
    for sid, rows in sorted(by_session(tree_rows()).items()):
        _, ch = fold_log(sid, rows, Ctx("i", "h"))
        m.apply(ch)
    return m


def tokens(m: Model, mid: str) -> tuple[int, ...]:
    r = m.tables["tokens"][mid]
    return tuple(getattr(r, b) for b in BUCKETS)


def owner(m: Model, mid: str) -> tuple[str, str]:
    r = m.tables["tokens"][mid]
    return r.session_id, r.agent_id


def test_streamed_parts_take_per_bucket_max_and_5m_remainder(model: Model) -> None:
    # msg_A: three parts, output 5/5/300; cache_creation 600 with breakdown 100 + 400 -> 5m gets 100 + 100
    assert tokens(model, "msg_A") == (10, 300, 1000, 200, 400)
    assert model.tables["tokens"]["msg_A"].occurred_at == "2026-02-12T10:00:01.000Z"  # earliest part


def test_main_transcript_beats_sidechain_replay(model: Model) -> None:
    assert owner(model, "msg_A") == (S1, S1)
    assert model.tables["tokens"]["msg_A"].claim_rank == 2


def test_agent_progress_copy_counts_only_when_direct_record_missing(model: Model) -> None:
    # msg_S1 exists in the subagent's own file (output 90 there, 1 in the copy): direct wins
    assert tokens(model, "msg_S1") == (7, 90, 700, 70, 0)
    assert model.tables["tokens"]["msg_S1"].claim_rank == 1
    # msg_S2 only as a copy: counted, attributed to the subagent, lowest rank
    assert tokens(model, "msg_S2") == (3, 30, 300, 0, 0)
    assert owner(model, "msg_S2") == (S1, "a1111111")
    assert model.tables["tokens"]["msg_S2"].claim_rank == 0


def test_tool_use_result_usage_and_synthetic_never_counted(model: Model) -> None:
    assert not any(k[0] == "msg_SYN" for k in model.tables["tokens"])
    assert all(getattr(r, b) < 50000 for r in model.tables["tokens"].values() for b in BUCKETS)
    assert not any(r.model == "<synthetic>" for r in model.tables["tokens"].values())


def test_recovered_line_usage_counts(model: Model) -> None:
    """A message on a line decoded with repairs (invalid UTF-8) still counts its usage."""
    assert tokens(model, "msg_D") == (4, 40, 400, 0, 0)


def test_no_breakdown_goes_to_5m(model: Model) -> None:
    assert tokens(model, "msg_L0") == (1, 10, 0, 50, 0)


def test_compaction_usage_flagged_and_agent_without_edge(model: Model) -> None:
    r = model.tables["tokens"]["msg_K"]
    assert r.agent_id == "acompact-abc123" and r.is_compaction_baseline == 1 and r.cache_write_1h == 90
    a = model.agent("acompact-abc123")
    assert a.is_compaction == 1 and a.parent_agent_id is None and a.status == "completed"
    assert not any(k[1] == "acompact-abc123" for k in model.tables["edges"])


def test_compaction_row(model: Model) -> None:
    """A compact_boundary record makes its compactions row: agent, time, trigger, the tokens before and
    the text of the summary record under it."""
    summary = "This session is being continued from a previous conversation that ran out of context."
    row = (S1, "cb1", S1, "2026-02-12T10:02:00.000Z", "auto", 12345, summary)
    assert model.tables["compactions"][(S1, "cb1")] == row


def test_edges_with_provenance_and_depth_two(model: Model) -> None:
    e = {k[1]: (v[2], v[4], v[8]) for k, v in model.tables["edges"].items()}
    assert e["a1111111"] == (S1, "tool_use", "toolu_TASK")
    assert e["a2222222"] == ("a1111111", "tool_use", "toolu_GRAND")  # grandchild spawned by a subagent
    assert e["b3333333"] == (S2, "directory", "toolu_OLD")  # 2.0.x flat: session + prompt
    assert e["sidechain-l3"] == (S3, "legacy_explore", "toolu_LEG")  # 1.0.x in-file sidechain
    assert "c4444444" not in e  # Warmup: no spawn, no invented parent
    assert len(e) == 4


def test_agents_types_and_status(model: Model) -> None:
    """Each fixture agent's type, subagent type, parent and status, with the spawn's input beating the
    .meta.json sidecar."""
    a = model.agents_by_id()
    assert a["a1111111"].subagent_type == "Explore" and a["a1111111"].status == "completed"
    assert a["a2222222"].subagent_type == "Plan"  # spawn input beats the .meta.json sidecar
    assert a["c4444444"].description == "Warmup" and a["c4444444"].parent_agent_id is None
    assert a["sidechain-l3"].type == "subagent" and a["sidechain-l3"].status == "completed"
    assert a[S1].type == "main" and a[S1].status == "waiting"  # last main reply called no tool
    assert set(a) == {S1, "a1111111", "a2222222", "acompact-abc123", S2, "b3333333", "c4444444", S3, "sidechain-l3", S4}


def test_tool_calls_interrupt_and_error(model: Model) -> None:
    t = model.tables["tools"]
    assert t[(S1, "toolu_BASH")].status == "interrupted"
    assert t[(S1, "toolu_READ")].status == "failed"
    assert t[(S1, "toolu_TASK")].status == "completed"
    assert t[(S1, "toolu_GRAND")].agent_id == "a1111111"


def test_sessions_real_cwd_and_metadata(model: Model) -> None:
    s = model.tables["sessions"]
    assert (s[S1].project_slug, s[S1].project_path) == ("-home-u-proj", "/home/u/proj") and s[S1].cc_version == "2.1.39"
    assert s[S2].project_path == "/home/u/old"
    # a summary titles the session of its leafUuid's record (the store joins it, SPEC §4.1); no
    # record of this fixture has uuid "l9", so the fold keeps the summary and titles nothing
    assert s[S3].title is None and s[S3].cc_version == "1.0.65"
    assert [r[3:] for r in model.tables["summaries"].values()] == [(S3, "l9", "Legacy work")]


def test_resumed_copy_owned_by_one_session_in_both_orders() -> None:
    rows = by_session(tree_rows())
    for order in ([S1, S4], [S4, S1]):
        m = Model()
        for sid in order:
            m.apply(fold_log(sid, rows[sid], Ctx())[1])
        assert owner(m, "msg_E") == (S1, S1)
        assert owner(m, "msg_R") == (S4, S4)


def test_hook_rows_fold() -> None:
    """Hook deliveries alone make the session, its agents and tool calls (a duplicate PostToolUse counts once, a
    SubagentStop for an agent never started makes none), one events row each."""
    from ingestd.core.records import LogRow

    sid = "55555555-5555-4555-8555-555555555555"

    def hook(i: int, name: str, ts: str, **body: object) -> LogRow:
        return hook_row(sid, i, name, ts, cwd="/w", **body)

    rows = [
        hook(1, "UserPromptSubmit", "2026-01-01T00:00:01.000Z", prompt="go"),
        hook(2, "PostToolUse", "2026-01-01T00:00:03.000Z", tool_name="Bash", tool_use_id="t1"),
        hook(3, "PreToolUse", "2026-01-01T00:00:02.000Z", tool_name="Bash", tool_use_id="t1"),
        hook(4, "PostToolUse", "2026-01-01T00:00:03.000Z", tool_name="Bash", tool_use_id="t1"),
        hook(5, "SubagentStart", "2026-01-01T00:00:04.000Z", agent_id="ag1", agent_type="Explore"),
        hook(6, "SubagentStop", "2026-01-01T00:00:05.000Z", agent_id="ag1", agent_type="Explore"),
        hook(7, "SubagentStop", "2026-01-01T00:00:05.500Z", agent_id="never-started", agent_type=""),
        hook(8, "Stop", "2026-01-01T00:00:06.000Z"),
    ]
    m = Model()
    state, ch = fold_log(sid, rows, Ctx())
    m.apply(ch)
    a = m.agents_by_id()
    assert a[sid].status == "waiting"  # Stop: the main agent waits; the subagent stop did not end it
    assert a["ag1"].status == "completed" and a["ag1"].subagent_type == "Explore"
    assert "never-started" not in a
    assert m.tables["tools"][(sid, "t1")][4:7] == ("2026-01-01T00:00:02.000Z", "2026-01-01T00:00:03.000Z", "completed")
    assert len(m.tables["events"]) == 8 and m.tables["events"][7].event_type == "SubagentStop"
    assert m.tables["sessions"][sid].project_path == "/w"
    # SessionEnd folded onto the state so far ends the session and its waiting main agent
    end = hook(9, "SessionEnd", "2026-01-01T00:01:00.000Z", reason="other")
    m.apply(fold(state, sid, [end], Ctx(), given([*rows, end]))[1])
    s = m.tables["sessions"][sid]
    assert (s.started_at, s.last_activity_at, s.status, s.end_reason) == (
        "2026-01-01T00:00:01.000Z",
        "2026-01-01T00:01:00.000Z",
        "completed",
        "other",
    )
    a = m.agents_by_id()
    assert a[sid].status == "completed" and a["ag1"].status == "completed"
    assert m.tables["events"][9].event_type == "SessionEnd"
    whole = Model()
    whole.apply(fold_log(sid, [*rows, end], Ctx())[1])
    assert m.tables == whole.tables
