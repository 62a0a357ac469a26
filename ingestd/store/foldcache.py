"""Per-session fold states kept between write transactions (DESIGN.md "Writers")."""

from __future__ import annotations

import collections

import apsw

from ingestd.core.state import SessionState


class FoldCache:
    """Bounded LRU of per-session fold states, each with the last log id it has seen.

    A state is brought up to date from the log (``events_raw_session`` index) before use, so
    another writer appending to the same database (daemon and ``ingest``) is picked up, and a
    miss costs one indexed scan of the session's rows. That catch-up query is skipped while
    the cache is known current: nobody else has committed to the connection it was last used
    with since (``PRAGMA data_version`` unchanged), so every cached state has seen every row.
    """

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._d: collections.OrderedDict[str, tuple[SessionState, int]] = collections.OrderedDict()
        # (connection, its data_version) as of the end of the last committed batch
        self.seen: tuple[apsw.Connection, int] | None = None
        self.gap_queries = 0  # catch-up queries run (tests count them)

    def take(self, sid: str) -> tuple[SessionState | None, int]:
        """Remove and return ``(state, last_id)`` (``(None, 0)`` on a miss)."""
        got = self._d.pop(sid, None)
        return got if got is not None else (None, 0)

    def put(self, sid: str, state: SessionState, last_id: int) -> None:
        """Store a state (evicting the least recently used beyond capacity)."""
        self._d[sid] = (state, last_id)
        while len(self._d) > self.capacity:
            self._d.popitem(last=False)
