"""The watchdog tick (DESIGN.md "Status"): advance ``as_of`` when agents have gone quiet.

The pass that marks agents ``unknown`` (``ingestd.store.watchdog_pass``) runs inside the store
writer after every transaction, with ``as_of = max(events_raw.received_at)``. Live, nothing else would
move that clock forward while Claude Code is silent, so every ``interval_s`` this tick
asks whether any non-terminal agent's ``last_seen_at`` is older than ``now - window``
and, only then, logs a ``watchdog`` row (source ``ingestd``, payload ``{"as_of": now, "window_s": w}``)
through the writer. A replay sees the same row, so it reaches the same statuses.
The row and the cutoff are built in the core (``ingestd.core.watchdog``). The clock is injected
(``clock() -> ns since the epoch``) so tests never sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable

from ingestd.core.timefmt import from_epoch_ns
from ingestd.core.watchdog import tick_cutoff, watchdog_row
from ingestd.daemon.committer import HookWriter
from ingestd.errors import StorageError
from ingestd.logs import get_logger
from ingestd.store.watchdog_pass import stale_count

__all__ = ["Clock", "run", "tick", "watchdog_row"]

log = get_logger("ingestd.watchdog")

Clock = Callable[[], int]


async def tick(writer: HookWriter, clock: Clock, window_s: float) -> int:
    """One watchdog check; returns how many agents the logged row will move (0: none logged).

    Raises:
        StorageError: the database refused the read or the write.
    """
    now_ns = clock()
    cutoff = tick_cutoff(now_ns, window_s)

    # a partial of a module-level function: the writer may be a process (it is pickled)
    n: int = await writer.call(functools.partial(stale_count, cutoff=cutoff))
    if n:
        await writer.submit([watchdog_row(now_ns, window_s)])
        log.info("watchdog_tick", stale_agents=n, as_of=from_epoch_ns(now_ns))
    return n


async def run(writer: HookWriter, clock: Clock, *, window_s: float, interval_s: float, stop: asyncio.Event) -> None:
    """Tick every ``interval_s`` until ``stop`` is set; a failing tick is logged and retried next time."""
    while not stop.is_set():
        try:
            await tick(writer, clock, window_s)
        except StorageError as e:
            log.error("watchdog_failed", error=str(e))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
