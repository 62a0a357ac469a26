"""The inferred time of a record whose timestamp is refused (``ingestd.core.validate``): a new valid
timestamp re-times exactly the refused records whose nearest valid timestamp it becomes."""

from __future__ import annotations

import bisect

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from ingestd.core.validate import infer_time, record_ts, retimed
from tests.core.folding import Incremental

offsets_st = st.lists(st.integers(0, 200), unique=True, max_size=30)


@given(valid=offsets_st, bad=offsets_st, new=st.integers(0, 200))
def test_a_new_valid_timestamp_retimes_exactly_the_refused_records_it_is_nearest_to(
    valid: list[int], bad: list[int], new: int
) -> None:
    bad = sorted(set(bad) - set(valid) - {new})
    offsets = sorted(valid)
    times = [f"t{o:03d}" for o in offsets]
    before = {b: infer_time(offsets, times, b, "read") for b in bad}
    i = record_ts(offsets, times, new, f"t{new:03d}")
    if i < 0:
        assert new in valid
        return
    after = {b: infer_time(offsets, times, b, "read") for b in bad}
    lo, hi = retimed(offsets, i, bad)
    # the slice is exactly the records whose time moved: nothing outside it (exact totals), and
    # nothing else re-touched (a file of n refused and m valid records once cost n x m)
    assert set(bad[lo:hi]) == {b for b in bad if before[b] != after[b]}


def test_record_ts_keeps_the_index_sorted_and_refuses_a_second_entry() -> None:
    offsets: list[int] = []
    times: list[str] = []
    assert [record_ts(offsets, times, o, f"t{o}") for o in (50, 10, 90, 10)] == [0, 0, 2, -1]
    assert offsets == [10, 50, 90] and times == ["t10", "t50", "t90"]
    assert bisect.bisect_left(offsets, 60) == 2


def test_a_record_dated_after_its_line_was_read_is_refused_and_its_usage_inferred() -> None:
    # a record dated 2099 kept its session "working" (out of the watchdog's reach) and counted in
    # every `--since` window; its timestamp is now refused like an impossible one
    sid = "f0f0f0f0-0000-4000-8000-000000000001"
    origin = f"-w/{sid}.jsonl"

    def line(i: int, ts: str) -> LogRow:
        msg = {"id": f"m{i}", "model": "m", "usage": {"input_tokens": 1, "output_tokens": 2}, "content": []}
        obj = {"type": "assistant", "sessionId": sid, "uuid": f"u{i}", "timestamp": ts, "message": msg}
        return LogRow(i, "jsonl", "assistant", orjson.dumps(obj), "2026-03-01T00:00:00.000Z", sid, origin, 0, i * 100)

    t1, future, t3 = "2026-02-28T10:00:00.000Z", "2099-01-01T00:00:00.000Z", "2026-03-01T23:59:59.000Z"
    _, ch = fold_log(sid, [line(1, t1), line(2, future), line(3, t3)], Ctx())
    read = "2026-03-01T00:00:00.000Z"
    said = f"timestamp '{future}' is after the line was read ({read}): usage counted, occurred_at inferred"
    # each pass of the fold gives its rows, the later winning (the stores upsert them): the first
    # pass, which had not indexed the file yet, found no valid timestamp beside it; the refold does
    assert {q.origin_offset: q.detail for q in ch.quarantine} == {200: said}
    occurred = {r.message_id: r.occurred_at for r in ch.token_usage}
    assert occurred == {"m1": t1, "m2": t1, "m3": t3}  # m3: within a day of the read, as clocks may be
    (session,) = ch.sessions[-1:]
    assert session.last_activity_at < "2026-03-02"


def test_usage_on_a_message_without_an_id_is_quarantined_not_lost_without_a_trace() -> None:
    sid = "f0f0f0f0-0000-4000-8000-000000000002"
    msg = {"id": None, "model": "m", "usage": {"input_tokens": 5, "output_tokens": 7}, "content": []}
    obj = {"type": "assistant", "sessionId": sid, "uuid": "u1", "timestamp": "2026-02-28T10:00:00.000Z", "message": msg}
    row = LogRow(1, "jsonl", "assistant", orjson.dumps(obj), "2026-03-01T00:00:00.000Z", sid, f"-w/{sid}.jsonl", 0, 0)
    _, ch = fold_log(sid, [row], Ctx())
    assert ch.token_usage == []
    assert [(q.reason, q.detail) for q in ch.quarantine] == [
        ("tokens", "usage on a message with id None: not counted (no id to merge its parts by)")
    ]


def _old_session_rows() -> list[LogRow]:
    """A transcript written on 2026-01-01 and read a month later (a backfill): two of its records
    carry refused timestamps, the first with no valid one before it in the file."""
    sid = SESSION_READ_LATE
    origin = f"-w/{sid}.jsonl"
    tool = {"type": "tool_use", "id": "tu0", "name": "Bash", "input": {}}
    msg = {"id": "m0", "model": "m", "usage": {"output_tokens": 1}, "content": [tool]}
    result = [{"type": "tool_result", "tool_use_id": "tu0", "content": "ok"}]
    records = [
        {"type": "assistant", "uuid": "u0", "timestamp": "2026-13-45T25:61:61.999Z", "message": msg},
        {"type": "user", "uuid": "u1", "timestamp": T1, "message": {"role": "user", "content": result}},
        {"type": "assistant", "uuid": "u2", "timestamp": T2, "message": {"id": "m1", "model": "m", "content": []}},
        {"type": "user", "uuid": "u3", "timestamp": "2099-01-01T00:00:00.000Z", "message": {"content": "more"}},
    ]
    return [
        LogRow(i + 1, "jsonl", str(r["type"]), orjson.dumps({"sessionId": sid, **r}), READ, sid, origin, 0, i * 100)
        for i, r in enumerate(records)
    ]


SESSION_READ_LATE = "f0f0f0f0-0000-4000-8000-000000000003"
T1, T2, READ = "2026-01-01T00:00:05.000Z", "2026-01-01T00:00:09.000Z", "2026-02-01T00:00:00.000Z"


@pytest.mark.parametrize(
    "batches",
    [[[0, 1, 2, 3]], [[0], [1], [2], [3]], [[3], [2], [1], [0]], [[1, 3], [0, 2]], [[0, 3], [2], [1]]],
    ids=["one", "in-order", "reversed", "interleaved", "refused-first"],
)
def test_a_refused_timestamp_dates_activity_at_its_inferred_time_not_the_read_time(batches: list[list[int]]) -> None:
    # read a month after it was written, the old session was "last active" at the read time and,
    # out of the watchdog's reach, "working"; its refused records are dated like their usage
    rows = _old_session_rows()
    inc = Incremental(SESSION_READ_LATE)
    got: dict[str, tuple[object, ...]] = {}
    for b in batches:
        ch = inc([rows[i] for i in b])  # a refold, when one is needed, happens inside the fold
        got.update({f"session {s.id[:8]}": s[3:6] for s in ch.sessions})
        got.update({f"agent {a.id}": (a.first_seen_at, a.last_seen_at) for a in ch.agents})
        got.update({f"tool {c.tool_use_id}": (c.started_at, c.ended_at) for c in ch.tool_calls})
        got.update({f"usage {u.message_id}": (u.occurred_at,) for u in ch.token_usage})
    assert got == {
        "session f0f0f0f0": (T1, T2, "working"),  # the refused prompt after the reply is still new activity
        f"agent {SESSION_READ_LATE}": (T1, T2),
        "tool tu0": (T1, T1),  # its call's record has no valid time before it: the next one
        "usage m0": (T1,),
    }


LEGACY_SID = "f0f0f0f0-0000-4000-8000-000000000004"


def _legacy_chain_rows() -> list[LogRow]:
    """A 1.0.x in-file sidechain (records chained by parentUuid, no agentId) whose records carry
    refused timestamps (corpus/claude-projects/-Users-user-linear-agent/263940d8-….jsonl with its
    timestamps damaged made this case)."""
    sid, origin = LEGACY_SID, f"-w/{LEGACY_SID}.jsonl"
    side = {"isSidechain": True}
    records = [
        {"type": "user", "uuid": "m1", "timestamp": T1, "message": {"role": "user", "content": "go"}},
        {"type": "user", "uuid": "s1", "parentUuid": None, "timestamp": T1, "message": {"content": "look"}, **side},
        {"type": "assistant", "uuid": "s2", "parentUuid": "s1", "timestamp": None, **side,
         "message": {"id": "ms2", "model": "m", "content": [], "usage": {"output_tokens": 1}}},
        {"type": "user", "uuid": "s3", "parentUuid": "s2", "timestamp": T2, "message": {"content": "more"}, **side},
        {"type": "assistant", "uuid": "s4", "parentUuid": "s3", "timestamp": "2026-13-01T00:00:00.000Z", **side,
         "message": {"id": "ms4", "model": "m", "content": [], "usage": {"output_tokens": 1}}},
    ]  # fmt: skip
    return [
        LogRow(i + 1, "jsonl", str(r["type"]), orjson.dumps({"sessionId": sid, **r}), READ, sid, origin, 0, i * 100)
        for i, r in enumerate(records)
    ]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_a_refold_retracts_the_provisional_sidechain_agents_folded_before_it(size: int) -> None:
    # the shell's history is the session's whole log (a rebuild, the writer), so a refold asked for
    # by a retimed record sees chains the batches so far had not completed: the provisional agents
    # those batches named must go, as they go when a later batch completes the chain
    from ingestd.core.projector import fold, given
    from tests.core.projector_support import Model

    rows = _legacy_chain_rows()
    whole = Model()
    whole.apply(fold_log(LEGACY_SID, rows, Ctx())[1])
    m, state = Model(), None
    backwards = rows[::-1]
    for i in range(0, len(backwards), size):
        state, ch = fold(state, LEGACY_SID, backwards[i : i + size], Ctx(), given(rows))
        m.apply(ch)
    assert m.tables == whole.tables
    assert [a for _, a in whole.tables["agents"]] == [LEGACY_SID, "sidechain-s1"]
