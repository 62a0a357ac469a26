"""Slow and idle connections cannot starve the receiver (SPEC §10).

Without limits, 3,000 connections trickling half-sent headers were held forever; with the usual
``ulimit -n 1024`` the daemon then ran out of descriptors, real hooks timed out and the log grew
by a ``Too many open files`` traceback per refused accept. ``ConnectionGuard`` wraps the protocol
of every accepted connection (aiohttp's ``web.Server`` is a protocol factory) and tracks what
each one is doing:

- ``idle``: connected, no byte of a next request yet. Closed after ``keepalive_timeout_s``.
- ``head``: bytes of a request arrived but its headers are not complete (the app has not seen
  it). Closed after ``header_timeout_s``: a slowloris client lives here.
- ``busy``: the app is handling a request (the app's middleware marks it: ``started``,
  ``finished``). Never closed by the guard; the body has its own timeout in the receiver (408).

Past ``max_connections`` open connections, the ones that made progress (a finished request, or
the connection itself) least recently and are not ``busy`` are closed; connections younger than
``young_s`` that have sent nothing yet go last (newest first), so a new, well-behaved client gets
in and is served. Every closing is counted and reported in one rate-limited
``connections_closed`` warning (at most one per ``warn_interval_s``, with counts by reason); a
failed ``accept`` for lack of descriptors becomes part of that warning too, instead of a
traceback each.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ingestd.logs import get_logger
from ingestd.settings import DEFAULTS

log = get_logger("ingestd.http")

IDLE, HEAD, BUSY = "idle", "head", "busy"
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


@dataclass(frozen=True, slots=True)
class ConnLimits:
    """Connection limits (settings ``header_timeout_ms``, ``keepalive_timeout_ms``, ``max_connections``).

    Attributes:
        header_timeout_s: float, a request's headers must be complete this long after its first byte.
        keepalive_timeout_s: float, a connection with no request in progress is closed after this.
        max_connections: int, open connections held at most.
        warn_interval_s: float, at most one ``connections_closed`` warning per this many seconds.
        young_s: float, a connection opened this recently that has sent nothing yet is closed for
            the cap only when no other can be, and then the newest first: a client's fresh
            connection, accepted but not yet read, must not be closed by the accepts that follow it.
    """

    header_timeout_s: float = DEFAULTS.get_int("header_timeout_ms") / 1000
    keepalive_timeout_s: float = DEFAULTS.get_int("keepalive_timeout_ms") / 1000
    max_connections: int = DEFAULTS.get_int("max_connections")
    warn_interval_s: float = 10.0
    young_s: float = 0.1

    @property
    def backlog(self) -> int:
        """The listen backlog: at most this many connections are accepted in one turn of the loop."""
        return min(128, self.max_connections)


@dataclass(slots=True)
class _Conn:
    transport: asyncio.BaseTransport
    phase: str
    since: float  # when the phase began
    progress: float  # the last finished request, or the connection itself
    opened: float
    tail: bytes = b""  # the last bytes of a head still arriving (its end may span two reads)


class _Guarded(asyncio.Protocol):
    """Forwards every protocol call to aiohttp's ``RequestHandler``, telling the guard first."""

    def __init__(self, guard: ConnectionGuard, inner: asyncio.Protocol) -> None:
        self._guard = guard
        self._inner = inner
        self._transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        self._inner.connection_made(transport)
        self._guard.opened(transport)

    def data_received(self, data: bytes) -> None:
        if self._transport is not None:
            self._guard.received(self._transport, data)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._transport is not None:
            self._guard.lost(self._transport)
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


class ConnectionGuard:
    """Tracks and limits the daemon's connections; see the module docstring.

    Args:
        limits: the limits.
        clock: monotonic seconds.
    """

    def __init__(self, limits: ConnLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        self._conns: dict[asyncio.BaseTransport, _Conn] = {}
        self._closed: dict[str, int] = {}
        self._last_warn = -float("inf")
        self.closed_total: dict[str, int] = {}  # by reason, for the life of the guard (tests, status)

    @property
    def open_connections(self) -> int:
        """Connections currently open."""
        return len(self._conns)

    def protocol_factory(self, inner: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory for ``loop.create_server`` wrapping ``inner`` (the runner's ``web.Server``)."""
        return lambda: _Guarded(self, inner())

    # -- events ------------------------------------------------------------------------
    def opened(self, transport: asyncio.BaseTransport) -> None:
        """A connection was accepted; past the cap, the least recently useful ones are closed."""
        now = self._clock()
        self._conns[transport] = _Conn(transport, IDLE, now, now, now)
        self._enforce_cap(now, settle=True)

    def _enforce_cap(self, now: float, *, settle: bool) -> None:
        """Close connections past the cap: not ``busy`` ones, least recent progress first.

        Fresh connections (younger than ``young_s``, nothing read yet) go last, newest first. One
        accept (``settle``) closes them only past the cap plus the listen backlog: that many
        connections can be accepted in one turn of the loop, before any of them is read, and a
        client's among them must not be closed for the ones accepted after it; the sweep, once
        they have been read, brings the count back to the cap.
        """
        excess = len(self._conns) - self.limits.max_connections
        if excess <= 0:
            return
        young = now - self.limits.young_s
        idle = [c for c in self._conns.values() if c.phase != BUSY]
        fresh = [c for c in idle if c.opened > young and c.phase == IDLE]
        settled = sorted((c for c in idle if c.opened <= young or c.phase != IDLE), key=lambda c: c.progress)
        for c in settled[:excess]:
            self._close(c, "over_max_connections")
        excess -= min(excess, len(settled))
        if settle:
            excess -= self.limits.backlog
        for c in sorted(fresh, key=lambda c: -c.opened)[: max(0, excess)]:
            self._close(c, "over_max_connections")

    def received(self, transport: asyncio.BaseTransport, data: bytes) -> None:
        """Bytes arrived: an idle connection starts a request (its header clock starts); the blank
        line ending the head makes it ``busy`` at once (the app takes it on the loop's next turn,
        and a burst of accepts in between must not close it)."""
        c = self._conns.get(transport)
        if c is None or c.phase == BUSY:
            return
        if c.phase == IDLE:
            c.phase, c.since, c.tail = HEAD, self._clock(), b""
        seen = c.tail + data
        if b"\r\n\r\n" in seen:
            c.phase, c.since, c.tail = BUSY, self._clock(), b""
        else:
            c.tail = seen[-3:]

    def lost(self, transport: asyncio.BaseTransport) -> None:
        """The connection is gone."""
        self._conns.pop(transport, None)

    def started(self, transport: asyncio.BaseTransport | None) -> None:
        """The app took a request from this connection (its headers are complete)."""
        c = self._conns.get(transport) if transport is not None else None
        if c is not None:
            c.phase, c.since = BUSY, self._clock()

    def finished(self, transport: asyncio.BaseTransport | None) -> None:
        """The app answered: the connection is idle (keep-alive) and made progress."""
        c = self._conns.get(transport) if transport is not None else None
        if c is not None:
            now = self._clock()
            c.phase, c.since, c.progress = IDLE, now, now

    # -- enforcement -------------------------------------------------------------------
    def _close(self, c: _Conn, reason: str) -> None:
        self._conns.pop(c.transport, None)
        c.transport.close()
        self.note(reason)

    def note(self, reason: str) -> None:
        """Count one closing (or refused accept) for the rate-limited warning."""
        self._closed[reason] = self._closed.get(reason, 0) + 1
        self.closed_total[reason] = self.closed_total.get(reason, 0) + 1
        self._maybe_warn()

    def _maybe_warn(self) -> None:
        now = self._clock()
        if self._closed and now - self._last_warn >= self.limits.warn_interval_s:
            self._last_warn = now
            log.warning("connections_closed", open=len(self._conns), **self._closed)
            self._closed = {}

    def sweep(self) -> None:
        """Close connections past their header or keep-alive timeout; flush a due warning."""
        now = self._clock()
        for c in list(self._conns.values()):
            if c.phase == HEAD and now - c.since > self.limits.header_timeout_s:
                self._close(c, "header_timeout")
            elif c.phase == IDLE and now - c.since > self.limits.keepalive_timeout_s:
                self._close(c, "keepalive_timeout")
        self._enforce_cap(now, settle=False)
        self._maybe_warn()

    async def run(self, stop: asyncio.Event) -> None:
        """Sweep until ``stop`` is set (a few times per shortest timeout)."""
        tick = max(0.05, min(1.0, self.limits.header_timeout_s / 4, self.limits.keepalive_timeout_s / 4))
        while not stop.is_set():
            self.sweep()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), tick)

    def exception_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The loop's exception handler: a refused ``accept`` (no descriptors left) is counted, not traced.

        asyncio reports it as ``socket.accept() out of system resource`` with the ``OSError`` and
        retries the accept a second later by itself; anything else goes to the default handler.
        """
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS and "accept" in str(context.get("message", "")):
            self.note("accept_failed_" + (errno.errorcode.get(exc.errno or 0, "resource").lower()))
            return
        loop.default_exception_handler(context)
