"""Order independence, batching, re-application and incremental == from scratch (SPEC §4, §7)."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core import async_support
from tests.core.folding import Incremental
from tests.core.projector_support import Model, by_session, hook_row, tree_rows

OPEN = "66666666-6666-4666-8666-666666666666"


def open_calls_session() -> list[LogRow]:
    """Tool calls left without a result by agents that end (SubagentStop, an API error turn that a
    later turn supersedes, SessionEnd), and one whose result comes after the end."""
    main = f"-home-u-s/{OPEN}.jsonl"

    def rec(i: int, agent: str | None, content: list[dict[str, object]], **kw: object) -> LogRow:
        obj = {"type": "assistant", "sessionId": OPEN, "uuid": f"u{i}", "timestamp": f"2026-01-01T00:00:{i:02}.000Z"}
        obj["message"] = {"id": f"m{i}", "model": kw.pop("model", "m"), "content": content}
        origin = main
        if agent is not None:
            obj.update(agentId=agent, isSidechain=True)
            origin = f"-home-u-s/{OPEN}/subagents/agent-{agent}.jsonl"
        obj.update(kw)
        return LogRow(i, "jsonl", "assistant", orjson.dumps(obj), "2026-03-01T00:00:00.000Z", OPEN, origin, 0, i)

    def use(i: int, agent: str | None = None) -> LogRow:
        return rec(i, agent, [{"type": "tool_use", "id": f"tu{i}", "name": "Bash", "input": {}}])

    def hook(i: int, name: str, **body: object) -> LogRow:
        return hook_row(OPEN, 100 + i, name, f"2026-01-01T00:01:{i:02}.000Z", tool_name="Bash", **body)

    done = {"type": "user", "sessionId": OPEN, "uuid": "r", "timestamp": "2026-01-01T00:02:00.000Z"}
    done["message"] = {"content": [{"type": "tool_result", "tool_use_id": "tu2", "content": "ok"}]}
    limit = [{"type": "text", "text": "Limit reached"}]
    return [
        use(1),
        use(2),
        hook(1, "PreToolUse", agent_id="a0000001", tool_use_id="ha"),
        hook(2, "PreToolUse", agent_id="a0000001", tool_use_id="hb"),
        hook(3, "SubagentStop", agent_id="a0000001", agent_type="Explore"),
        use(3, "a0000002"),
        rec(4, "a0000002", limit, model="<synthetic>", isApiErrorMessage=True, error="rate_limit"),
        use(5, "a0000003"),
        rec(6, "a0000003", limit, model="<synthetic>", isApiErrorMessage=True, error="rate_limit"),
        use(7, "a0000003"),
        hook(9, "SessionEnd", reason="other"),
        LogRow(300, "jsonl", "user", orjson.dumps(done), "2026-03-01T00:00:00.000Z", OPEN, main, 0, 300),
    ]


MIXED = "77777777-7777-4777-8777-777777777777"


def mixed_session() -> list[LogRow]:
    """Hooks and transcript lines of one session that both say where it lives (SPEC §4.1 joins):
    the transcript folder is ``-w-zeta``, the hooks' ``transcript_path`` names ``-w-alpha`` (a moved
    project), plus subagent hooks, tool hooks, a session title and SessionEnd."""
    main = f"-w-zeta/{MIXED}.jsonl"
    sub = f"-w-zeta/{MIXED}/subagents/agent-a7a7a7a.jsonl"

    def rec(i: int, origin: str, obj: dict[str, object]) -> LogRow:
        full = {"sessionId": MIXED, "uuid": f"m{i}", "timestamp": f"2026-01-01T00:00:{i:02}.000Z", "cwd": "/w/zeta"}
        full.update(obj)
        return LogRow(
            i, "jsonl", str(full["type"]), orjson.dumps(full), "2026-03-01T00:00:00.000Z", MIXED, origin, 0, i
        )

    def hook(i: int, name: str, **body: object) -> LogRow:
        tp = f"/h/.claude/projects/-w-alpha/{MIXED}.jsonl"
        at = f"2026-01-01T00:00:{30 + i:02}.000Z"
        return hook_row(MIXED, 200 + i, name, at, cwd="/w/alpha", transcript_path=tp, **body)

    spawn = {"type": "tool_use", "id": "tuS", "name": "Task", "input": {"prompt": "p", "subagent_type": "Explore"}}
    return [
        rec(1, main, {"type": "user", "message": {"role": "user", "content": "go"}}),
        rec(2, main, {"type": "assistant", "message": {"id": "mm1", "model": "m", "content": [spawn],
                                                        "usage": {"input_tokens": 5, "output_tokens": 2}}}),
        rec(3, sub, {"type": "user", "agentId": "a7a7a7a", "isSidechain": True, "parentUuid": None,
                     "message": {"role": "user", "content": "p"}}),
        rec(4, sub, {"type": "assistant", "agentId": "a7a7a7a", "isSidechain": True,
                     "message": {"id": "ms1", "model": "m",
                                 "content": [{"type": "tool_use", "id": "tuB", "name": "Bash"}],
                                 "usage": {"input_tokens": 7, "output_tokens": 3}}}),
        hook(1, "UserPromptSubmit", prompt="go", session_title="Mixed work"),
        hook(2, "SubagentStart", agent_id="a7a7a7a", agent_type="Explore"),
        hook(3, "PreToolUse", agent_id="a7a7a7a", tool_name="Bash", tool_use_id="tuB"),
        hook(4, "PostToolUse", agent_id="a7a7a7a", tool_name="Bash", tool_use_id="tuB"),
        hook(5, "SubagentStart", agent_id="a8a8a8a", agent_type="Plan"),
        hook(6, "SubagentStop", agent_id="a7a7a7a", agent_type="Explore"),
        hook(7, "Stop"),
        hook(8, "SessionEnd", reason="prompt_input_exit"),
    ]  # fmt: skip


REFUSED = "88888888-8888-4888-8888-888888888888"


def refused_session() -> list[LogRow]:
    """Records whose timestamps are refused, in two files, read a month after they were written:
    their activity, status evidence, tool and spawn times are the inferred ones (the nearest valid
    timestamp of the same file), which later rows of the file can move (a refold)."""
    main = f"-w-r/{REFUSED}.jsonl"
    sub = f"-w-r/{REFUSED}/subagents/agent-a9a9a9a.jsonl"
    bad = ("2026-13-45T25:61:61.999Z", "2099-01-01T00:00:00.000Z", None, "soon")

    def rec(i: int, origin: str, ts: object, obj: dict[str, object]) -> LogRow:
        full = {"sessionId": REFUSED, "uuid": f"r{i}", "timestamp": ts, "cwd": "/w/r", **obj}
        return LogRow(
            i, "jsonl", str(full["type"]), orjson.dumps(full), "2026-02-01T00:00:00.000Z", REFUSED, origin, 0, i
        )

    def ok(i: int) -> str:
        return f"2026-01-01T00:00:{i:02}.000Z"

    spawn = {"type": "tool_use", "id": "tuR", "name": "Task", "input": {"prompt": "q", "subagent_type": "Plan"}}
    bash = {"type": "tool_use", "id": "tuB", "name": "Bash", "input": {}}
    sub_kw = {"agentId": "a9a9a9a", "isSidechain": True}
    return [
        rec(1, main, bad[0], {"type": "assistant", "message": {"id": "mr1", "model": "m", "content": [spawn],
                                                               "usage": {"output_tokens": 2}}}),
        rec(2, main, ok(2), {"type": "user", "message": {"role": "user", "content": "go"}}),
        rec(3, sub, bad[2], {"type": "user", "parentUuid": None, "message": {"content": "q"}, **sub_kw}),
        rec(4, sub, ok(4), {"type": "assistant", "message": {"id": "mr2", "model": "m", "content": [bash]}, **sub_kw}),
        rec(5, sub, bad[3], {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "tuB",
                                                                      "content": "ok"}]}, **sub_kw}),
        rec(6, main, ok(6), {"type": "system", "subtype": "compact_boundary", "compactMetadata": {"trigger": "auto"}}),
        rec(7, main, bad[1], {"type": "user", "message": {"role": "user", "content": "more"}}),
        hook_row(REFUSED, 400, "Stop", "2026-01-01T00:00:08.000Z"),
    ]  # fmt: skip


ROWS = by_session(tree_rows())
ROWS[REFUSED] = refused_session()
ROWS[OPEN] = open_calls_session()
ROWS[MIXED] = mixed_session()
ROWS[async_support.SID] = async_support.session()  # a real 2.1.332 background agent (every notice form)
SESSIONS = sorted(ROWS)


def scratch(sid: str) -> Model:
    m = Model()
    m.apply(fold_log(sid, ROWS[sid], Ctx())[1])
    return m


SCRATCH = {sid: scratch(sid).tables for sid in SESSIONS}


def folded(sid: str, rows: list[LogRow], cuts: list[int]) -> tuple[Model, Incremental]:
    m = Model()
    inc = Incremental(sid)
    prev = 0
    for c in [*sorted({c % (len(rows) + 1) for c in cuts}), len(rows)]:
        m.apply(inc(rows[prev:c]))
        prev = c
    return m, inc


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SESSIONS), st.randoms(use_true_random=False), st.lists(st.integers(0, 200), max_size=8))
def test_any_order_and_batching_gives_identical_rows(sid: str, rnd: object, cuts: list[int]) -> None:
    rows = list(ROWS[sid])
    rnd.shuffle(rows)  # type: ignore[attr-defined]
    m, _ = folded(sid, rows, cuts)
    assert m.tables == SCRATCH[sid]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(SESSIONS), st.lists(st.integers(0, 200), max_size=5))
def test_reapplying_a_batch_changes_nothing(sid: str, cuts: list[int]) -> None:
    rows = ROWS[sid]
    m, inc = folded(sid, rows, cuts)
    m.apply(inc(rows))
    assert m.tables == SCRATCH[sid]


def test_refused_timestamps_date_nothing_at_the_read_time() -> None:
    # every time of the session's rows is a time of its own records (a month before they were read)
    times = {v for row in (r for tab in SCRATCH[REFUSED].values() for r in tab.values()) for v in row}
    assert not {v for v in times if isinstance(v, str) and v.startswith("2026-02")}
    assert {v for v in times if isinstance(v, str) and v.startswith("2026-01")} >= {
        "2026-01-01T00:00:02.000Z",
        "2026-01-01T00:00:04.000Z",
        "2026-01-01T00:00:06.000Z",
    }


def test_open_calls_of_ended_agents_are_interrupted() -> None:
    t = {k[1]: v[5:7] for k, v in SCRATCH[OPEN]["tools"].items()}
    assert t == {
        "tu1": (None, "interrupted"),  # the main agent's, the session ended
        "tu2": ("2026-01-01T00:02:00.000Z", "completed"),  # its result came after the end
        "ha": (None, "interrupted"),  # SubagentStop
        "hb": (None, "interrupted"),
        "tu3": (None, "interrupted"),  # the agent's run ended on a rate limit
        "tu5": (None, "interrupted"),  # superseded by tu7, then the session ended
        "tu7": (None, "interrupted"),
    }


def test_open_calls_follow_their_agent_incrementally() -> None:
    rows = ROWS[OPEN]
    for n in range(len(rows) + 1):
        m, _ = folded(OPEN, rows, [n])
        assert m.tables == SCRATCH[OPEN]
    # before the end: the stopped and the failed agents' calls are interrupted, the others run
    m, _ = folded(OPEN, rows[:9], [])
    st = {k[1]: v[6] for k, v in m.tables["tools"].items()}
    assert st == {
        "tu1": "running",
        "tu2": "running",
        "ha": "interrupted",
        "hb": "interrupted",
        "tu3": "interrupted",
        "tu5": "interrupted",
    }
    m, _ = folded(OPEN, rows[:10], [9])
    assert {k[1]: v[6] for k, v in m.tables["tools"].items()}["tu5"] == "running"  # tu7 reopened the run


def test_incremental_equals_scratch_and_touches_only_new_rows() -> None:
    sid = SESSIONS[0]
    rows = ROWS[sid]
    inc = Incremental(sid)
    inc(rows[:-1])
    ch = inc(rows[-1:])
    # one appended line re-derives a bounded set of rows, not the whole session
    assert len(ch.token_usage) <= 5 and len(ch.tool_calls) <= 1
    m, _ = folded(sid, rows, [len(rows) - 1])
    assert m.tables == SCRATCH[sid]


def test_mixed_session_joins_every_source() -> None:
    t = SCRATCH[MIXED]
    s = t["sessions"][MIXED]
    # the transcript's own folder beats a hook's transcript_path, and a record's cwd beats a hook's
    assert s[1:3] == ("-w-zeta", "/w/zeta")
    assert s[5] == "completed" and s[8] == "Mixed work"
    a = {k[1]: (r.status, r.outcome_cause) for k, r in t["agents"].items()}
    assert a == {
        MIXED: ("completed", None),
        "a7a7a7a": ("completed", None),  # SubagentStop
        "a8a8a8a": ("error", "terminated_early"),  # started, never stopped, the session ended
    }
