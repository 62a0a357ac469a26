"""Shipping to a store that does not answer: backoff, and a warning once then at intervals."""

from __future__ import annotations

import itertools


def test_an_unreachable_store_is_tried_less_often_and_said_once_then_at_intervals() -> None:
    # Regression: ship_to unreachable logged ship_failed at error level every 5 s, without backoff
    from structlog.testing import capture_logs

    from ingestd.daemon.jobs import SHIP_MAX_WAIT_S, SHIP_REMIND_S, ShipFailures

    now = [0.0]
    failures = ShipFailures(5, clock=lambda: now[0])
    with capture_logs() as logs:
        waits = []
        for _ in range(12):
            waits.append(failures.failed("db.example", "connection refused"))
            now[0] += waits[-1]
        failures.shipped("db.example")
        failures.failed("db.example", "connection refused")
    assert waits[:7] == [5, 10, 20, 40, 80, 160, SHIP_MAX_WAIT_S]
    assert waits[7:] == [SHIP_MAX_WAIT_S] * 5
    said = [(e["event"], e["log_level"], e.get("failures")) for e in logs]
    # 12 failures over 35 minutes: said at the first, then at most once every SHIP_REMIND_S
    times = [sum(waits[: i - 1]) for _e, _l, i in said[:-2]]
    assert said[0] == ("ship_failed", "warning", 1)
    assert all(b - a >= SHIP_REMIND_S for a, b in itertools.pairwise(times))
    assert 2 <= len(said) - 2 <= 5
    assert said[-2:] == [("ship_resumed", "info", 12), ("ship_failed", "warning", 1)]


def test_a_long_interval_is_never_shortened_by_a_failure() -> None:
    # review: with ship_interval_s=3600 the first failure waited SHIP_MAX_WAIT_S (300 s), i.e. a
    # store that is down was tried twelve times as often as one that answers
    from structlog.testing import capture_logs

    from ingestd.daemon.jobs import ShipFailures

    failures = ShipFailures(3600)
    with capture_logs():
        waits = [failures.failed("db.example", "connection refused") for _ in range(40)]
    assert waits[:3] == [3600, 3600, 3600]
    assert set(waits) == {3600}
