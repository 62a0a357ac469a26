"""What ``/api/health`` reports (SPEC §10): the truth about the writer, the tailer and the file.

One ``Health`` object per daemon. The parts that do the work tell it what happens:

- ``busy(part)`` when a unit of work starts and ``ok(part)`` when one finishes: a part busy for
  longer than ``stall_after_s`` (a transaction waiting on a lock held elsewhere, a disk that
  stopped answering, retries of a transient error) is *stalled*;
- ``failed(part, reason)`` when a unit of work fails: the part is *failing* from the first
  failure until its next success (a read-only database fails every write at once);
- ``retrying(part, reason)`` / ``retried(part)`` from the retry loop of a write the database
  refused for a while (busy, full, I/O: ``ingestd.store.writer.retrying``, whose ``Backoff``
  reports here): the part is *stalled, retrying* until its write goes through; these stalls are
  also listed in ``/api/status`` (``stalls()``) and mirrored to ``<db>.stalls.json`` for
  ``ingestd status`` in another process (``ingestd.store.stall``);
- ``set_problem(name, reason)`` / ``clear_problem(name)`` for conditions found by a check (the
  start-up ``PRAGMA quick_check``, the file no longer writable).

``problems()`` lists the reasons, one vocabulary: ``<part> failing ...``, ``<part> stalled: ...``,
``<check>: ...``; the endpoint answers 503 with them when there are any. Parts
are named by string (``"writer"``, ``"tailer"``), so another part can report here without a change
to this module. The event loop, the writer's thread and the ingest thread (its commit hook,
``daemon.checks.report_commits``) call it; each call is one dict operation, which the GIL makes
atomic (the stalls and their mirror file change under a lock).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ingestd.store import stall

WRITER = "writer"
TAILER = "tailer"


@dataclass(frozen=True, slots=True)
class _Failure:
    since: float
    reason: str


class Health:
    """The daemon's health state; see the module docstring.

    Args:
        stall_after_s: float, a part busy (or failing, for ``stalled``) longer than this is stalled.
        clock: monotonic seconds (tests pass their own).
        mirror: Path | None, the stalls file to keep (``ingestd.store.stall.mirror_path``; None: none).
        wall_clock: seconds since the epoch, for the stalls (their mirror is read by another process).
    """

    def __init__(
        self,
        stall_after_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        mirror: Path | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.stall_after_s = stall_after_s
        self._clock = clock
        self._wall = wall_clock
        self._mirror = mirror
        self._retrying: dict[str, stall.Stall] = {}
        self._retry_lock = threading.Lock()
        self._busy: dict[str, float] = {}
        self._failing: dict[str, _Failure] = {}
        self._problems: dict[str, str] = {}

    def busy(self, part: str) -> None:
        """``part`` started a unit of work (the first start counts until ``ok`` or ``idle``)."""
        self._busy.setdefault(part, self._clock())

    def progress(self, part: str) -> None:
        """``part`` committed something while still working: its stall clock restarts."""
        if part in self._busy:
            self._busy[part] = self._clock()

    def idle(self, part: str) -> None:
        """``part`` has nothing in progress (its outcome reported separately)."""
        self._busy.pop(part, None)

    def ok(self, part: str) -> None:
        """``part`` finished a unit of work: it is neither busy nor failing."""
        self._busy.pop(part, None)
        self._failing.pop(part, None)

    def failed(self, part: str, reason: str) -> None:
        """``part`` failed a unit of work; it counts as failing since its first failure in a row."""
        self._busy.pop(part, None)
        prev = self._failing.get(part)
        self._failing[part] = _Failure(prev.since if prev else self._clock(), reason)

    def failure(self, part: str) -> _Failure | None:
        """``part``'s last failure (``.reason``, ``.since``), or None when it is not failing. Every
        ``failed`` makes a new record, so ``is`` tells whether another failure arrived meanwhile
        (the same reason text can recur)."""
        return self._failing.get(part)

    def retrying(self, part: str, reason: str) -> None:
        """``part`` met a transient refusal (``reason``) and will retry: stalled until ``retried``.

        Side effect: rewrites the mirror file, when there is one.
        """
        with self._retry_lock:
            prev = self._retrying.get(part)
            since = prev.since_unix_s if prev is not None else self._wall()
            self._retrying[part] = stall.Stall(part, reason, since, (prev.retries if prev else 0) + 1)
            self._write_mirror()

    def retried(self, part: str) -> None:
        """``part``'s write went through (or it gave up): no longer retrying."""
        with self._retry_lock:
            if self._retrying.pop(part, None) is not None:
                self._write_mirror()

    def _write_mirror(self) -> None:
        if self._mirror is not None:
            stall.write_mirror(self._mirror, list(self._retrying.values()))

    def stalls(self) -> list[dict[str, object]]:
        """The parts retrying now, ``{component, reason, seconds, retries}`` each (``/api/status``)."""
        now = self._wall()
        with self._retry_lock:
            items = sorted(self._retrying.values(), key=lambda s: s.component)
        return [s.to_json(now) for s in items]

    def set_problem(self, name: str, reason: str) -> None:
        """A condition found by a check (e.g. ``quick_check``) makes the daemon unhealthy until cleared."""
        self._problems[name] = reason

    def clear_problem(self, name: str) -> None:
        """The condition ``name`` no longer holds."""
        self._problems.pop(name, None)

    def problems(self) -> list[str]:
        """Every current reason to answer 503, one line each (empty: healthy)."""
        now = self._clock()
        out = [f"{name}: {reason}" for name, reason in sorted(self._problems.items())]
        for part, f in sorted(self._failing.items()):
            out.append(f"{part} failing for {now - f.since:.1f} s: {f.reason}")
        for s in self.stalls():
            out.append(f"{s['component']} stalled: retrying for {s['seconds']:.1f} s: {s['reason']}")
        for part, since in sorted(self._busy.items()):
            if now - since > self.stall_after_s:
                out.append(f"{part} stalled: one unit of work has run for {now - since:.1f} s")
        return out
