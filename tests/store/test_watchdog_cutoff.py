"""The watchdog cutoff's memoised spelling equals the plain computation."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.timefmt import format_utc, parse
from ingestd.core.watchdog import watchdog_cutoff

BASE = parse("2020-01-01T00:00:00.000Z")


@given(ms=st.integers(0, 10**12), window_s=st.sampled_from([0, 1, 59, 600, 86_400, 400 * 86_400]))
def test_cutoff_equals_parse_minus_window(ms: int, window_s: int) -> None:
    assert BASE is not None
    as_of = format_utc(BASE + timedelta(milliseconds=ms))
    expected = format_utc(BASE + timedelta(milliseconds=ms) - timedelta(seconds=window_s))
    assert watchdog_cutoff(as_of, window_s) == expected
    assert watchdog_cutoff(as_of, window_s) == expected  # memoised


def test_other_spellings_and_non_instants() -> None:
    assert watchdog_cutoff("2026-01-01T00:00:00Z", 600) == "2025-12-31T23:50:00.000Z"
    assert watchdog_cutoff("2026-01-01T00:00:00.abcZ", 1) is None
    assert watchdog_cutoff("not a time", 600) is None
