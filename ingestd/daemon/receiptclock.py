"""The daemon's receipt clock: wall time that never steps back within a run (SPEC §12).

Every receipt time the daemon stamps (a hook's ``received_at``, a transcript line's read time, the
watchdog's rows and its reference) comes from one ``ReceiptClock``. The projector orders a
session's hooks by receipt time: with the wall clock stepped back (NTP after a suspend, a VM
resumed, ``date -s``), a Stop received after a PreToolUse was stamped before it, the session stayed
``working``, and a tool call ended before it started.

The clock is the wall clock at start plus the time elapsed since on a steady clock
(``CLOCK_BOOTTIME`` where there is one: it counts a suspend, so a resumed machine is not behind;
else ``CLOCK_MONOTONIC``), and strictly increasing:

- the wall clock stepped *forward* (NTP correcting a slow clock, a suspend the steady clock did not
  count) by more than ``FOLLOW_NS``: the clock follows it at once, as receipt times always did;
- the wall clock stepped *back*: the clock does not (receipts stay in the order they came, times
  keep their spacing), and stays ahead of the wall clock by the step for the rest of the run; a
  restart takes the wall clock again. The forward case of the log (receipt times in the future,
  read while a clock was ahead) is the watchdog's cap at the clock (``core.watchdog.reference_time``),
  which this clock feeds too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

FOLLOW_NS = 1_000_000_000  # a wall clock this far ahead of the steady one is followed


def _steady_ns() -> int:
    boot = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime_ns(boot) if boot is not None else time.monotonic_ns()


class ReceiptClock:
    """ns since the epoch, strictly increasing within one process (see the module docstring).

    Args:
        wall: the wall clock (ns since the epoch; None: ``time.time_ns``, looked up at each call);
        steady: a clock that never steps (ns).
        follow_ns: how far ahead the wall clock must be to be followed.

    Thread-safe: the loop, the ingest thread and the writer call it.
    """

    def __init__(
        self,
        wall: Callable[[], int] | None = None,
        steady: Callable[[], int] = _steady_ns,
        follow_ns: int = FOLLOW_NS,
    ) -> None:
        self._wall = wall if wall is not None else (lambda: time.time_ns())
        self._steady = steady
        self._follow_ns = follow_ns
        self._offset = self._wall() - steady()
        self._last = 0
        self._lock = threading.Lock()

    def __call__(self) -> int:
        w, s = self._wall(), self._steady()
        with self._lock:
            now = self._offset + s
            if w - now > self._follow_ns:
                self._offset = w - s
                now = w
            now = max(now, self._last + 1)
            self._last = now
            return now
