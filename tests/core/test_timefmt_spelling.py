"""``format_utc`` and ``from_epoch_ns`` spell every instant as the strftime rule did.

The fast spelling (``isoformat``, milliseconds truncated) must give the very bytes of
``strftime("%Y-%m-%dT%H:%M:%S.") + milliseconds + "Z"``: a stored time that changed spelling would
break text ordering and the byte-identical projections.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.timefmt import format_utc, from_epoch_ns


def strftime_spelling(dt: datetime) -> str:
    dt = dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


@given(
    st.datetimes(
        min_value=datetime(2, 1, 1),
        max_value=datetime(9998, 12, 31),
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]),
    )
)
def test_format_utc_is_the_strftime_spelling(dt: datetime) -> None:
    assert format_utc(dt) == strftime_spelling(dt)


@given(st.integers(min_value=-(10**19), max_value=10**20))
def test_from_epoch_ns_is_the_strftime_spelling(ns: int) -> None:
    assert from_epoch_ns(ns) == strftime_spelling(datetime.fromtimestamp(ns / 1e9, tz=UTC))


def test_the_edges_of_the_spelling() -> None:
    assert format_utc(datetime(2026, 12, 1, 11, 42, 33, 465999, tzinfo=UTC)) == "2026-12-01T11:42:33.465Z"
    assert format_utc(datetime(2026, 12, 1, 0, 0, 0, 0, tzinfo=UTC)) == "2026-12-01T00:00:00.000Z"
    assert format_utc(datetime(999, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)) == strftime_spelling(
        datetime(999, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)
    )
    assert from_epoch_ns(0) == "1970-01-01T00:00:00.000Z"
