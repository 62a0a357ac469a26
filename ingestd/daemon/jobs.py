"""The daemon's periodic jobs: scheduled prune and backup, and team-mode shipping.

Each is a coroutine the app starts in its ``cleanup_ctx`` (``ingestd.http.app``) and stops by
setting ``stop``; the blocking work runs off the loop. Both read the settings the daemon resolved
once at start (``ServeConfig.settings``), never the environment or the config file again.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime

from ingestd.daemon.config import ServeConfig
from ingestd.errors import IngestdError
from ingestd.logs import get_logger

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


async def ship_loop(cfg: ServeConfig, stop: asyncio.Event) -> None:
    """Team mode (SPEC §13): follow the ``ship_to`` setting, shipping the log batch by batch.

    Nothing to do when the setting is unset. Each pass ships a bounded number of batches off the
    loop; the next pass follows at once while more is pending, else after ``ship_interval_s``.
    A failed pass (store down, refused) is logged and retried after the interval.
    """
    url = cfg.settings.get_opt_str("ship_to")
    if not url:
        return
    from ingestd.central.pg import describe
    from ingestd.central.ship import Shipper

    where = describe(url)  # checked at start (``checks.check_ship_to``)
    shipper = Shipper(str(cfg.db_path), url, batch_rows=cfg.settings.get_int("ship_batch_rows"), max_batches=10)
    interval_s = max(1, cfg.settings.get_int("ship_interval_s"))
    loop = asyncio.get_running_loop()
    try:
        while not stop.is_set():
            wait_s: float = interval_s
            try:
                got = await loop.run_in_executor(None, shipper.run_once)
                if got.sent:
                    log.info("shipped", store=where, rows=got.sent, inserted=got.inserted, through=got.shipped_through)
                if got.sent >= shipper.batch_rows * shipper.max_batches:
                    wait_s = 0
            except IngestdError as e:
                log.error("ship_failed", store=where, error=e.message)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait_s)
    finally:
        await loop.run_in_executor(None, shipper.close)
