"""Live updates for the web page: one change feed, pushed as server-sent events (SPEC §14).

``GET /api/live`` is an event stream (``text/event-stream``). Whatever commits a change (the hook
writer thread, the tailer's own thread and connection, the watchdog, a scheduled prune, another
process such as ``ingestd pricing set``), one server task notices it: every ``interval_s`` it asks a
private read-only connection for ``PRAGMA data_version``, which changes exactly when another
connection has committed. Then it reads the log's high-water mark (``max(events_raw.id)``) and the
sessions of the new log rows, and wakes every subscriber. A slow subscriber never holds the feed up:
changes coalesce per subscriber (a set of session ids, or "everything") until it sends.

Events on the stream:

- ``hello`` once on connect: ``{"log_id", "boot"}`` (``boot`` is this daemon run's start time, so
  the page knows a restart happened and refetches everything);
- ``change``: ``{"log_id", "sessions"}``, ``sessions`` the ids whose log rows arrived since the
  last event, or ``null`` when anything may have changed (prices, a watchdog tick, a prune, more
  than ``MAX_SESSIONS_LISTED`` sessions);
- a comment line every ``HEARTBEAT_S`` keeps proxies and dead-peer detection honest.

Who gets a stream: a request the browser marks as coming from another site (``Sec-Fetch-Site``
other than ``same-origin`` or ``none``: a page elsewhere framing or navigating to ``/api/live``
sends no ``Origin``, so the Origin rule cannot see it) is refused 403 ``cross_site``. At most
``max_streams`` streams are open at once, and at most ``max_per_client`` of one client (its peer
address); no one can hold them all: a stream past either cap evicts the one that has been open
longest, of that client when it is over its own cap, else of the client holding the most (the
evicted stream ends; a page's ``EventSource`` reconnects by itself). On shutdown every stream ends
at once (``on_shutdown``), so a restart never waits for browsers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import orjson
from aiohttp import web

from ingestd.errors import IngestdError
from ingestd.http.hooks import error_response
from ingestd.logs import get_logger
from ingestd.store.connection import Db, connect

log = get_logger("ingestd.live")

MAX_STREAMS = 16
MAX_STREAMS_PER_CLIENT = 4
_SITES = frozenset(("same-origin", "none"))  # Sec-Fetch-Site values of the daemon's own page, or a typed URL
POLL_INTERVAL_S = 0.2
HEARTBEAT_S = 10.0
MAX_SESSIONS_LISTED = 50
RETRY_MS = 1000


def _one_int(conn: Db, sql: str) -> int:
    # fetchall() runs the statement to its end, so this long-lived connection never keeps a read
    # snapshot open between polls (that would pin the WAL and hide later commits).
    value = conn.execute(sql).fetchall()[0][0]
    return int(value) if isinstance(value, int) else 0


@dataclass(slots=True, eq=False)
class _Subscriber:
    """One open stream's pending change: ``sessions`` None means "everything"; ``wake`` is set when any is pending."""

    wake: asyncio.Event = field(default_factory=asyncio.Event)
    sessions: set[str] | None = field(default_factory=set)
    dirty: bool = False
    log_id: int = 0
    client: str = ""  # the peer address
    opened: int = 0  # the feed's stream counter when it opened
    evicted: bool = False

    def push(self, log_id: int, sessions: set[str] | None) -> None:
        if sessions is None or self.sessions is None:
            self.sessions = None
        else:
            self.sessions |= sessions
        self.log_id = log_id
        self.dirty = True
        self.wake.set()

    def take(self) -> dict[str, Any]:
        doc = {"log_id": self.log_id, "sessions": None if self.sessions is None else sorted(self.sessions)}
        self.sessions = set()
        self.dirty = False
        self.wake.clear()
        return doc


class ChangeFeed:
    """Polls the database for commits and fans them out to the open streams.

    Args:
        db_path: the database file (read through its own read-only connection, on a worker thread).
        interval_s: seconds between polls; the page's latency is at most this plus one fetch.
        max_streams: cap on concurrently open streams.

    Attributes:
        polls: int, polls done so far, a failed read included (a commit after the first is noticed).
    """

    def __init__(
        self,
        db_path: Path,
        *,
        interval_s: float = POLL_INTERVAL_S,
        max_streams: int = MAX_STREAMS,
        max_per_client: int = MAX_STREAMS_PER_CLIENT,
    ) -> None:
        self.db_path = db_path
        self.interval_s = interval_s
        self.max_streams = max_streams
        self.max_per_client = max_per_client
        self.opened = 0
        self.boot = time.time_ns()
        self.log_id = 0
        self.polls = 0
        self.subscribers: set[_Subscriber] = set()
        self.closing = asyncio.Event()
        self._conn: Db | None = None
        self._data_version: int | None = None
        self._failing = False

    def _poll(self) -> tuple[int, set[str] | None] | None:
        """Worker thread: None when nothing committed since the last poll, else (log id, sessions or None)."""
        if self._conn is None:
            self._conn = connect(self.db_path, readonly=True)
        conn = self._conn
        version = _one_int(conn, "PRAGMA data_version")
        first = self._data_version is None
        if version == self._data_version:
            return None
        self._data_version = version
        new_id = _one_int(conn, "SELECT COALESCE(max(id), 0) FROM events_raw")
        old_id, self.log_id = self.log_id, new_id
        if first:
            return None
        if new_id <= old_id:
            return new_id, None  # a commit without log rows: prices, a prune, a backup stamp
        rows = conn.execute(
            "SELECT DISTINCT session_id FROM events_raw WHERE id > ? AND id <= ? LIMIT ?",
            (old_id, new_id, MAX_SESSIONS_LISTED + 1),
        ).fetchall()
        ids = {r[0] for r in rows}
        if None in ids or len(ids) > MAX_SESSIONS_LISTED:
            return new_id, None
        return new_id, {str(i) for i in ids}

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self._data_version = None

    def admit(self, client: str) -> _Subscriber:
        """A new stream for ``client``, after evicting the stream the caps say goes (module docstring)."""
        mine = [s for s in self.subscribers if s.client == client]
        victim: _Subscriber | None = None
        if len(mine) >= self.max_per_client:
            victim = min(mine, key=lambda s: s.opened)
        elif len(self.subscribers) >= self.max_streams:
            counts: dict[str, int] = {}
            for s in self.subscribers:
                counts[s.client] = counts.get(s.client, 0) + 1
            most = max(counts.values())
            victim = min((s for s in self.subscribers if counts[s.client] == most), key=lambda s: s.opened)
        if victim is not None:
            log.warning("live_stream_evicted", client=victim.client, open=len(self.subscribers), cap=self.max_streams)
            victim.evicted = True
            victim.wake.set()
            self.subscribers.discard(victim)
        self.opened += 1
        sub = _Subscriber(client=client, opened=self.opened)
        self.subscribers.add(sub)
        return sub

    def broadcast(self, log_id: int, sessions: set[str] | None) -> None:
        """Hand one change to every open stream (coalesced with what each has not sent yet)."""
        for sub in self.subscribers:
            sub.push(log_id, sessions)

    async def run(self, stop: asyncio.Event) -> None:
        """Poll until ``stop`` is set. A read that fails is logged once per outage and retried."""
        loop = asyncio.get_running_loop()
        try:
            while not stop.is_set():
                try:
                    change = await loop.run_in_executor(None, self._poll)
                except (apsw.Error, IngestdError) as e:
                    if not self._failing:
                        log.warning("live_feed_read_failed", error=str(e))
                    self._failing = True
                    await loop.run_in_executor(None, self._close)
                else:
                    if self._failing:
                        log.info("live_feed_read_recovered")
                        self._failing = False
                        change = (self.log_id, None)  # whatever happened meanwhile: refetch everything
                    if change is not None:
                        self.broadcast(*change)
                finally:
                    self.polls += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.interval_s)
        finally:
            await loop.run_in_executor(None, self._close)


FEED = web.AppKey("live_feed", ChangeFeed)


def _event(name: str, doc: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(doc) + b"\n\n"


async def stream(request: web.Request) -> web.StreamResponse:
    """``GET /api/live``: the event stream (see the module docstring)."""
    feed = request.app[FEED]
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site not in _SITES:
        log.warning("live_stream_refused", reason="cross_site", sec_fetch_site=site)
        return error_response(403, "cross_site", "the live feed is served to this daemon's own page only")
    sub = feed.admit(request.remote or "")
    resp = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
    )
    try:
        await resp.prepare(request)
        await resp.write(f"retry: {RETRY_MS}\n".encode() + _event("hello", {"log_id": feed.log_id, "boot": feed.boot}))
        last_write = time.monotonic()
        while not feed.closing.is_set():
            transport = request.transport
            if transport is None or transport.is_closing():
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(sub.wake.wait(), 1.0)
            if feed.closing.is_set() or sub.evicted:
                break
            if sub.dirty:
                await resp.write(_event("change", sub.take()))
                last_write = time.monotonic()
            elif time.monotonic() - last_write >= HEARTBEAT_S:
                await resp.write(b": ping\n\n")
                last_write = time.monotonic()
    except (ConnectionResetError, ConnectionError):
        pass
    finally:
        feed.subscribers.discard(sub)
    return resp


def add_live_routes(
    app: web.Application,
    db_path: Path,
    *,
    interval_s: float = POLL_INTERVAL_S,
    max_streams: int = MAX_STREAMS,
    max_per_client: int = MAX_STREAMS_PER_CLIENT,
) -> ChangeFeed:
    """Register ``GET /api/live`` and the feed's poll task (``cleanup_ctx``) on ``app``.

    Args:
        app: the daemon's application.
        db_path: the database the writers write.
        interval_s: seconds between polls.
        max_streams: cap on concurrently open streams; max_per_client: of one peer address.

    Returns:
        The feed (tests push into it or read its subscribers).
    """
    feed = ChangeFeed(db_path, interval_s=interval_s, max_streams=max_streams, max_per_client=max_per_client)
    app[FEED] = feed
    app.router.add_get("/api/live", stream)

    async def feed_ctx(app: web.Application) -> AsyncIterator[None]:
        done = asyncio.Event()
        task = asyncio.create_task(feed.run(done))
        yield
        done.set()
        await task

    async def close_streams(app: web.Application) -> None:
        feed.closing.set()
        for sub in feed.subscribers:
            sub.wake.set()

    app.cleanup_ctx.append(feed_ctx)
    app.on_shutdown.append(close_streams)
    return feed
