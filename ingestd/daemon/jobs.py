"""The daemon's periodic jobs: the watchdog tick, scheduled prune and backup, team-mode shipping.

Each is a coroutine the composition root (``ingestd.daemon.root``) starts in the app's
``cleanup_ctx`` and stops by setting ``stop``; the blocking work runs off the loop. They read the
settings the daemon resolved once at start (``ServeConfig``, ``ServeConfig.settings``), never the
environment or the config file again.

The watchdog tick (DESIGN.md "Status") advances ``as_of`` when agents have gone quiet. The pass
that marks agents ``unknown`` (``ingestd.store.watchdog_pass``) runs inside the write path after
every transaction, with ``as_of = max(events_raw.received_at)``. Live, nothing else would move that
clock forward while Claude Code is silent, so every ``interval_s`` ``watchdog_loop`` asks whether
any non-terminal agent's ``last_seen_at`` is older than ``now - window`` and, only then, logs a
``watchdog`` row (source ``ingestd``, payload ``{"as_of": now, "window_s": w}``) through the
writer. A replay sees the same row, so it reaches the same statuses. The row and the cutoff are
built in the core (``ingestd.core.watchdog``). The clock is injected (``clock() -> ns since the
epoch``) so tests never sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from datetime import UTC, datetime

from ingestd.core.timefmt import from_epoch_ns
from ingestd.core.watchdog import tick_cutoff, watchdog_row
from ingestd.daemon.config import ServeConfig
from ingestd.errors import ConfigError, IngestdError, MigrationError, StorageError
from ingestd.http.health import Health
from ingestd.http.hooks import HookWriter
from ingestd.logs import get_logger
from ingestd.store.watchdog_pass import stale_count

log = get_logger("ingestd.serve")


async def cancel(task: asyncio.Task[None] | None) -> None:
    """Cancel a background task (None: it was never started) and wait until it has ended."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _first_of(backfilled: asyncio.Event, stop: asyncio.Event) -> None:
    """Wait until the start-up backfill has ended or the daemon stops."""
    waits = [asyncio.ensure_future(backfilled.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


async def schedule_loop(cfg: ServeConfig, stop: asyncio.Event, backfilled: asyncio.Event | None = None) -> None:
    """Daily prune and backup (``ingestd.retention.schedule``), blocking work off the loop.

    Args:
        cfg: the daemon's configuration; ``cfg.settings`` holds the retention settings.
        stop: set when the daemon stops.
        backfilled: set when the start-up backfill has ended; the first run waits for it (None: no wait).
    """
    from ingestd.retention import schedule

    loop = asyncio.get_running_loop()
    if backfilled is not None and not backfilled.is_set():
        log.info("schedule_waiting", reason="the start-up backfill runs first")
        await _first_of(backfilled, stop)
    while not stop.is_set():
        try:
            await loop.run_in_executor(None, schedule.run_scheduled, cfg.db_path, cfg.settings, datetime.now(UTC))
        except IngestdError as e:
            log.error("schedule_failed", error=e.message)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), schedule.CHECK_EVERY_S)


# A store that stays unreachable is tried less and less often, up to this many seconds apart (or
# ship_interval_s when that is longer: a failure never brings the next try closer than a success
# would), and said so at most this often (the first failure at once): each machine works offline (docs/reference.md).
SHIP_MAX_WAIT_S = 300.0
SHIP_REMIND_S = 600.0
SHIPPER = "shipper"  # the part ``Health`` knows the shipping loop by
UNREACHABLE_HINT = "the log is kept here and shipped once the store answers; retried less often meanwhile"
REFUSED_HINT = "the store refuses this host: nothing more is shipped until the error is fixed; the log is kept here"


class ShipFailures:
    """The shipping passes failed in a row: how long to wait before the next, and when to say so.

    Args:
        interval_s: float, seconds after the first failure (``ship_interval_s``), doubled per
            failure in a row up to ``SHIP_MAX_WAIT_S`` or ``interval_s``, whichever is longer.
        clock: monotonic seconds.
    """

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self.count = 0
        self._said_at: float | None = None

    def failed(self, where: str, error: str, *, refused: bool = False) -> float:
        """One more failure: the seconds to wait. Logs ``ship_failed`` (warning) the first time and
        then every ``SHIP_REMIND_S`` while the failures go on.

        Args:
            refused: the store refuses this host (a configuration or ledger it does not accept),
                which trying again does not mend: the hint says so.
        """
        self.count += 1
        cap_s = max(SHIP_MAX_WAIT_S, self._interval_s)
        wait_s: float = min(cap_s, self._interval_s * 2.0 ** min(self.count - 1, 16))
        now = self._clock()
        if self._said_at is None or now - self._said_at >= SHIP_REMIND_S:
            self._said_at = now
            log.warning(
                "ship_failed",
                store=where,
                error=error,
                failures=self.count,
                next_try_s=wait_s,
                hint=REFUSED_HINT if refused else UNREACHABLE_HINT,
            )
        return wait_s

    def shipped(self, where: str) -> None:
        """A pass went through: the next failure is news again (logs ``ship_resumed`` after failures)."""
        if self.count:
            log.info("ship_resumed", store=where, failures=self.count)
        self.count, self._said_at = 0, None


async def ship_loop(cfg: ServeConfig, stop: asyncio.Event, health: Health | None = None) -> None:
    """Team mode (SPEC §13): follow the ``ship_to`` setting, shipping the log batch by batch.

    Nothing to do when the setting is unset. Each pass ships a bounded number of batches off the
    loop; the next pass follows at once while more is pending, else after ``ship_interval_s``.
    A failed pass (store down, refused) is retried with backoff (``ShipFailures``) and reported to
    ``health`` as the ``shipper`` failing, with the reason, until a pass goes through
    (``/api/health`` answers 503 meanwhile; ``ingestd status`` shows it).
    """
    url = cfg.settings.get_opt_str("ship_to")
    if not url:
        return
    from ingestd.central.pg import describe
    from ingestd.central.ship import Shipper

    where = describe(url)  # checked at start (``checks.check_ship_to``)
    shipper = Shipper(
        str(cfg.db_path),
        url,
        batch_rows=cfg.settings.get_int("ship_batch_rows"),
        batch_bytes=cfg.settings.get_int("ship_batch_bytes"),
        max_batches=10,
    )
    interval_s = max(1, cfg.settings.get_int("ship_interval_s"))
    loop = asyncio.get_running_loop()
    failures = ShipFailures(interval_s)
    try:
        while not stop.is_set():
            wait_s: float = interval_s
            try:
                got = await loop.run_in_executor(None, shipper.run_once)
                failures.shipped(where)
                if health is not None:
                    health.ok(SHIPPER)
                if got.sent:
                    log.info("shipped", store=where, rows=got.sent, inserted=got.inserted, through=got.shipped_through)
                if got.more:
                    wait_s = 0
            except IngestdError as e:
                wait_s = failures.failed(where, e.message, refused=isinstance(e, ConfigError | MigrationError))
                if health is not None:
                    health.failed(SHIPPER, f"shipping to {where}: {e.message}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait_s)
    finally:
        await loop.run_in_executor(None, shipper.close)


watchdog_log = get_logger("ingestd.watchdog")

Clock = Callable[[], int]


async def watchdog_tick(writer: HookWriter, clock: Clock, window_s: float) -> int:
    """One watchdog check; returns how many agents the logged row will move (0: none logged).

    Raises:
        StorageError: the database refused the read or the write.
    """
    now_ns = clock()
    cutoff = tick_cutoff(now_ns, window_s)

    n: int = await writer.call(functools.partial(stale_count, cutoff=cutoff))
    if n:
        await writer.submit([watchdog_row(now_ns, window_s)])
        watchdog_log.info("watchdog_tick", stale_agents=n, as_of=from_epoch_ns(now_ns))
    return n


async def watchdog_loop(
    writer: HookWriter, clock: Clock, *, window_s: float, interval_s: float, stop: asyncio.Event
) -> None:
    """Tick every ``interval_s`` until ``stop`` is set; a failing tick is logged and retried next time."""
    while not stop.is_set():
        try:
            await watchdog_tick(writer, clock, window_s)
        except StorageError as e:
            watchdog_log.error("watchdog_failed", error=str(e))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
