"""What ``/api/health`` reports (SPEC §10): the truth about the writer, the tailer and the file.

One ``Health`` object per daemon. The parts that do the work tell it what happens:

- ``busy(part)`` when a unit of work starts and ``ok(part)`` when one finishes: a part busy for
  longer than ``stall_after_s`` (a transaction waiting on a lock held elsewhere, a disk that
  stopped answering, retries of a transient error) is *stalled*;
- ``failed(part, reason)`` when a unit of work fails: the part is *failing* from the first
  failure until its next success (a read-only database fails every write at once);
- ``set_problem(name, reason)`` / ``clear_problem(name)`` for conditions found by a check (the
  start-up ``PRAGMA quick_check``, the file no longer writable).

``problems(now)`` lists the reasons; the endpoint answers 503 with them when there are any. Parts
are named by string (``"writer"``, ``"tailer"``), so another part can report here without a change
to this module. The event loop, the writer's thread and the ingest thread (its commit hook,
``daemon.checks.report_commits``) call it; each call is one dict operation, which the GIL makes atomic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

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
    """

    def __init__(self, stall_after_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.stall_after_s = stall_after_s
        self._clock = clock
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
        for part, since in sorted(self._busy.items()):
            if now - since > self.stall_after_s:
                out.append(f"{part} stalled: one unit of work has run for {now - since:.1f} s")
        return out
