"""Stalls: a writer retrying a transient refusal (busy, full, I/O) says so (SPEC §12, §10).

A process-wide registry, thread-safe: ``ingestd.store.isolate.retrying`` marks a component
stalled while it waits to retry and clears it when the write goes through or gives up.
``/api/health`` answers 503 with the stall's reason while any component is stalled, and
``/api/status`` lists them. The daemon also mirrors them to a small file beside the database
(``mirror_to``: ``<db>.stalls.json``, private, removed when the stall clears) so ``ingestd
status`` in another process can list them (``read_mirror``); a full disk may keep that file
from being written, the API always knows.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from ingestd import atomicfile


@dataclass(frozen=True, slots=True)
class Stall:
    """One stalled component.

    Attributes:
        component: str, ``ingest`` / ``tailer`` / ``hooks``.
        reason: str, the database's last refusal.
        since_ns: int, monotonic ns when the stall began.
        retries: int, retries so far.
        since_unix_s: float, wall-clock seconds when it began (for the mirror file).
    """

    component: str
    reason: str
    since_ns: int
    retries: int
    since_unix_s: float = 0.0


_lock = threading.Lock()
_stalls: dict[str, Stall] = {}
_mirror: Path | None = None


def mirror_path(db_path: Path) -> Path:
    """The stall file of a database: ``<db>.stalls.json``."""
    return Path(str(db_path) + ".stalls.json")


def mirror_to(db_path: Path | None) -> None:
    """Mirror stalls to ``mirror_path(db_path)`` from now on (None: stop). Called by ``serve``."""
    global _mirror
    with _lock:  # nothing written yet: a second daemon refused by the lock must not touch the file
        _mirror = None if db_path is None else mirror_path(db_path)


def _write_mirror() -> None:
    """Rewrite (or remove) the mirror; under ``_lock``. Best effort: an OSError is ignored."""
    if _mirror is None:
        return
    with contextlib.suppress(OSError):
        if not _stalls:
            _mirror.unlink(missing_ok=True)
            return
        doc = {
            "pid": os.getpid(),
            "stalls": [
                {"component": s.component, "reason": s.reason, "since_unix_s": s.since_unix_s, "retries": s.retries}
                for s in _stalls.values()
            ],
        }
        atomicfile.replace(_mirror, orjson.dumps(doc), 0o600)


def read_mirror(db_path: Path, now_unix_s: float) -> list[dict[str, object]]:
    """The stalls the daemon of ``db_path`` mirrored, if that daemon still runs ([] otherwise). Read-only."""
    try:
        doc = orjson.loads(mirror_path(db_path).read_bytes())
        pid = int(doc["pid"])
        os.kill(pid, 0)  # a file left by a daemon that died says nothing
        items = list(doc["stalls"])
    except (OSError, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        return []
    return [
        {
            "component": str(s.get("component")),
            "reason": str(s.get("reason")),
            "seconds": round(max(0.0, now_unix_s - float(s.get("since_unix_s", now_unix_s))), 3),
            "retries": int(s.get("retries", 0)),
        }
        for s in items
        if isinstance(s, dict)
    ]


def begin(component: str, reason: str) -> None:
    """Mark ``component`` stalled (again) with ``reason``; counts the retry."""
    with _lock:
        prev = _stalls.get(component)
        since = prev.since_ns if prev is not None else time.monotonic_ns()
        wall = prev.since_unix_s if prev is not None else time.time()
        _stalls[component] = Stall(component, reason, since, (prev.retries if prev else 0) + 1, wall)
        _write_mirror()


def end(component: str) -> None:
    """The component's write went through (or gave up): no longer stalled."""
    with _lock:
        if _stalls.pop(component, None) is not None:
            _write_mirror()


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
