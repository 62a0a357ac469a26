"""The inferred time of a record whose timestamp is refused (``ingestd.core.validate``): a new valid
timestamp re-times exactly the refused records whose nearest valid timestamp it becomes."""

from __future__ import annotations

import bisect

import orjson
from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from ingestd.core.validate import infer_time, record_ts, retimed

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
    assert {(q.origin_offset, q.detail) for q in ch.quarantine} == {(200, said)}
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
