"""The connection guard's rules, with scripted connections and a scripted clock (no sockets, no sleeps)."""

from __future__ import annotations

import asyncio
import errno
from typing import Any

from structlog.testing import capture_logs

from ingestd.http.conns import ConnectionGuard, ConnLimits


class FakeTransport(asyncio.Transport):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def __repr__(self) -> str:
        return self.name


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def guard(**kw: Any) -> tuple[ConnectionGuard, Clock]:
    clock = Clock()
    limits = ConnLimits(**{"header_timeout_s": 1.0, "keepalive_timeout_s": 5.0, "max_connections": 3, **kw})
    return ConnectionGuard(limits, clock=clock), clock


def test_a_head_that_never_ends_is_closed_at_the_header_timeout() -> None:
    g, clock = guard()
    slow, quick = FakeTransport("slow"), FakeTransport("quick")
    for t in (slow, quick):
        g.opened(t)
    g.received(slow, b"POST /hooks HTTP/1.1\r\nHost: x\r\n")
    g.received(quick, b"POST /hooks HTTP/1.1\r\nHost: x\r")
    g.received(quick, b"\n\r\n{}")  # the blank line split across two reads still ends the head
    clock.t += 0.9
    g.received(slow, b"X-Slow: 1\r\n")  # trickling bytes do not restart the clock
    g.sweep()
    assert not slow.closed
    clock.t += 0.2
    g.sweep()
    assert slow.closed and not quick.closed
    assert g.closed_total == {"header_timeout": 1}


def test_an_idle_keepalive_connection_is_closed_after_its_timeout_and_a_busy_one_never() -> None:
    g, clock = guard()
    idle, busy = FakeTransport("idle"), FakeTransport("busy")
    g.opened(idle)
    g.opened(busy)
    g.started(busy)  # a long request: the body has its own timeout in the receiver
    clock.t += 5.1
    g.sweep()
    assert idle.closed and not busy.closed
    g.finished(busy)
    clock.t += 4.9
    g.sweep()
    assert not busy.closed
    clock.t += 0.2
    g.sweep()
    assert busy.closed
    assert g.closed_total == {"keepalive_timeout": 2}


def test_past_the_cap_the_least_recently_useful_connection_goes_and_busy_ones_stay() -> None:
    g, clock = guard()
    a, b, c, d = (FakeTransport(n) for n in "abcd")
    g.opened(a)
    clock.t += 1
    g.opened(b)
    clock.t += 1
    g.opened(c)
    g.started(a)  # a is being served: never closed
    g.received(b, b"GET / HTTP/1.1\r\n")  # b trickles a head
    clock.t += 1
    g.opened(d)  # over the cap (3): the settled, non-busy connection with the oldest progress goes
    assert b.closed and not a.closed and not c.closed and not d.closed
    assert g.open_connections == 3


def test_connections_accepted_in_one_burst_are_trimmed_by_the_sweep_newest_first() -> None:
    g, clock = guard(max_connections=2)
    old = [FakeTransport(f"old{i}") for i in range(2)]
    for t in old:
        g.opened(t)
        g.started(t)
    burst = [FakeTransport(f"new{i}") for i in range(3)]
    for t in burst:
        clock.t += 0.001
        g.opened(t)  # all fresh and unread: within cap + backlog (2), so only the newest beyond it goes
    assert [t.closed for t in burst] == [False, False, True]
    g.received(burst[0], b"POST /hooks HTTP/1.1\r\n\r\n")  # a real client: its head is complete
    clock.t += 0.2
    g.sweep()
    assert not burst[0].closed and burst[1].closed
    assert g.open_connections == 3  # 2 busy + the one being served; the cap counts busy ones too


def test_one_rate_limited_warning_with_counts_by_reason() -> None:
    g, clock = guard(max_connections=1, warn_interval_s=10.0)
    with capture_logs() as logs:
        for i in range(50):
            t = FakeTransport(f"t{i}")
            g.opened(t)
            g.received(t, b"G")
            clock.t += 0.15
        g.sweep()
        clock.t += 10
        g.sweep()
    warnings = [e for e in logs if e["event"] == "connections_closed"]
    assert len(warnings) == 2
    assert warnings[0]["over_max_connections"] == 1
    # 49 closed for the cap as the next arrived, the last one at its header timeout
    assert sum(w.get("over_max_connections", 0) for w in warnings) == 49
    assert sum(w.get("header_timeout", 0) for w in warnings) == 1


def test_an_accept_out_of_descriptors_is_counted_not_traced() -> None:
    g, _ = guard()
    loop = asyncio.new_event_loop()
    try:
        seen: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _l, ctx: seen.append(ctx))
        exc = OSError(errno.EMFILE, "Too many open files")
        with capture_logs() as logs:
            g.exception_handler(loop, {"message": "socket.accept() out of system resource", "exception": exc})
        assert g.closed_total == {"accept_failed_emfile": 1}
        assert [e["event"] for e in logs] == ["connections_closed"]
    finally:
        loop.close()
