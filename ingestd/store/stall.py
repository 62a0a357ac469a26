"""Stalls: a writer retrying a transient refusal (busy, full, I/O) says so (SPEC §12, §10).

A process-wide registry, thread-safe: ``ingestd.store.isolate.retrying`` marks a component
stalled while it waits to retry and clears it when the write goes through or gives up.
``/api/health`` answers 503 with the stall's reason while any component is stalled, and
``ingestd status`` run in the daemon's process (the API's ``/api/status``) lists them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Stall:
    """One stalled component.

    Attributes:
        component: str, ``ingest`` / ``tailer`` / ``hooks``.
        reason: str, the database's last refusal.
        since_ns: int, monotonic ns when the stall began.
        retries: int, retries so far.
    """

    component: str
    reason: str
    since_ns: int
    retries: int


_lock = threading.Lock()
_stalls: dict[str, Stall] = {}


def begin(component: str, reason: str) -> None:
    """Mark ``component`` stalled (again) with ``reason``; counts the retry."""
    with _lock:
        prev = _stalls.get(component)
        since = prev.since_ns if prev is not None else time.monotonic_ns()
        _stalls[component] = Stall(component, reason, since, (prev.retries if prev else 0) + 1)


def end(component: str) -> None:
    """The component's write went through (or gave up): no longer stalled."""
    with _lock:
        _stalls.pop(component, None)


def current() -> list[dict[str, object]]:
    """The stalled components, as JSON-ready dicts (``component``, ``reason``, ``seconds``, ``retries``)."""
    now = time.monotonic_ns()
    with _lock:
        items = sorted(_stalls.values(), key=lambda s: s.component)
    return [
        {
            "component": s.component,
            "reason": s.reason,
            "seconds": round((now - s.since_ns) / 1e9, 3),
            "retries": s.retries,
        }
        for s in items
    ]
