"""The inferred time of a record whose timestamp is refused (``ingestd.core.validate``): a new valid
timestamp re-times exactly the refused records whose nearest valid timestamp it becomes."""

from __future__ import annotations

import bisect

from hypothesis import given
from hypothesis import strategies as st

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
