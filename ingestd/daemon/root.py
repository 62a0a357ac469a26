"""The composition root: the daemon assembled from its parts (``assemble``).

``assemble`` builds every part the daemon runs and hands each what it consumes: the health state,
the WAL checkpointer, the hook writer (``ingestd.daemon.hookwriter``) and
the HTTP app over them (``ingestd.http.app.make_app``: the receiver, the read API, the live view),
then the background work, each started and stopped in the app's ``cleanup_ctx``: the writer first
(so everything else can write), then the tailer (catch-up, then follow), the watchdog tick, the
scheduled retention jobs (whose first run waits for the catch-up), shipping (``ingestd.daemon.jobs``)
and the probe of a failing writer. The process around it (lock, port, database preparation,
signals) is ``ingestd.daemon.main``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from ingestd.daemon import checks, fileguard, hookwriter, jobs, presence
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.fileguard import FileGuard
from ingestd.daemon.hookwriter import ApplyFn, ThreadWriter
from ingestd.daemon.ingestrun import IngestRunner
from ingestd.daemon.receiptclock import ReceiptClock
from ingestd.daemon.tailer import ChangeSource, IngestFn, Tailer, watch_changes
from ingestd.http import guard
from ingestd.http import health as health_mod
from ingestd.http.api import HEALTH
from ingestd.http.app import Ctx, make_app
from ingestd.http.conns import ConnectionGuard
from ingestd.http.health import Health
from ingestd.http.hooks import HookWriter
from ingestd.logs import get_logger
from ingestd.report.budget import BudgetCheck, caps_from
from ingestd.report.window import resolve_zone
from ingestd.store import stall
from ingestd.store.connection import Db, LockWaits, connect, poll_when_busy
from ingestd.store.migrate import migrate
from ingestd.store.walcheckpoint import WalCheckpointer

log = get_logger("ingestd.serve")

CONFIG = web.AppKey("config", ServeConfig)
WRITER = web.AppKey("writer", HookWriter)
TAILER = web.AppKey("tailer", Tailer)
STOP = web.AppKey("stop", asyncio.Event)
CHECKPOINTER = web.AppKey("checkpointer", WalCheckpointer)
LOCK_WAITS = web.AppKey("lock_waits", LockWaits)  # the hook writer's waits for the tailer's lock


def _open_write_conn(
    db_path: Path, guard: FileGuard | None, health: Health, part: str | None = None, waits: LockWaits | None = None
) -> Db:
    """A write connection, migrated, polling a held lock every millisecond (``poll_when_busy``: the
    hook writer and the tailer take turns), each wait told to ``waits``; with ``guard``, every commit
    refused once the path no longer names the daemon's file (``fileguard.guard_commits``), and
    ``part``'s progress told to ``health``."""
    conn = connect(db_path)
    migrate(conn)
    poll_when_busy(conn, on_wait=None if waits is None else waits.note)
    if guard is not None:
        return fileguard.guard_commits(conn, guard, health, part)
    return checks.report_commits(conn, health, part) if part is not None else conn


def assemble(
    cfg: ServeConfig,
    *,
    apply: ApplyFn | None = None,
    clock: Callable[[], int] | None = None,
    changes: ChangeSource = watch_changes,
    ingest: IngestFn | None = None,
    conns: ConnectionGuard | None = None,
    file_guard: FileGuard | None = None,
    on_file_lost: Callable[[], None] | None = None,
) -> web.Application:
    """The daemon's application; its background work starts when it starts (``cleanup_ctx``).

    Args:
        cfg: the configuration.
        apply: what the writer runs per grouped transaction (tests inject failures).
        clock: ns since the epoch, for every receipt time (hooks, transcript reads, the watchdog);
            None: a ``ReceiptClock`` (never steps back within the run).
        changes: the tailer's change source.
        ingest: override the tailer's ingest function (tests); default the ingest code.
        conns: the connection guard ``serve`` wraps the listening socket's connections in.
        file_guard: the database file's identity, checked before every commit and every second
            (``fileguard``; None: not checked); ``on_file_lost`` is called once it no longer holds
            (``serve`` stops), after the WAL was folded into the old file.

    Raises:
        ConfigError: an ``allowed_origins`` item is not an origin.
    """
    clock = ReceiptClock() if clock is None else clock
    policy = guard.make_policy(cfg.host, cfg.port, cfg.allowed_hosts, cfg.allowed_origins)
    health = Health(cfg.stall_after_s, mirror=stall.mirror_path(cfg.db_path))
    # Both write connections (hooks, tailer) leave WAL checkpoints to this thread.
    checkpointer = WalCheckpointer(lambda: connect(cfg.db_path))
    waits = LockWaits()
    writer = _make_writer(cfg, apply, health, checkpointer, file_guard, waits)

    def daemon_state(now: datetime) -> dict[str, Any]:
        return presence.self_report(cfg.db_path, now).to_json()

    caps = caps_from(cfg.settings)
    budget = BudgetCheck(cfg.db_path, caps, resolve_zone(None, dict(os.environ))) if caps.any() else None

    app = make_app(
        policy=policy,
        token=cfg.token,
        hooks=cfg.hooks,
        writer=writer,
        health=health,
        db_path=cfg.db_path,
        daemon_state=daemon_state,
        clock=clock,
        budget=budget,
        background=[
            _writer_ctx,
            _tailer_ctx(clock, changes, ingest, file_guard),
            _watchdog_ctx(clock),
            _schedule_ctx,
            _ship_ctx,
            _probe_ctx,
            *([] if file_guard is None else [_file_guard_ctx(file_guard, on_file_lost)]),
        ],
        conns=conns,
    )
    app[CONFIG] = cfg
    app[STOP] = asyncio.Event()
    app[CHECKPOINTER] = checkpointer
    app[LOCK_WAITS] = waits
    app[WRITER] = writer
    return app


def _make_writer(
    cfg: ServeConfig,
    apply: ApplyFn | None,
    health: Health,
    checkpointer: WalCheckpointer,
    guard: FileGuard | None,
    waits: LockWaits,
) -> HookWriter:
    """The hook writer, running ``apply`` (tests inject one) or the daemon's own (``make_apply``);
    its waits for the lock told to ``waits``."""
    return ThreadWriter(
        lambda: checkpointer.attach(_open_write_conn(cfg.db_path, guard, health, waits=waits)),
        apply if apply is not None else hookwriter.make_apply(),
        health=health,
        between=checkpointer.restart_missed,
    )


async def _writer_ctx(app: web.Application) -> AsyncIterator[None]:
    """The checkpointer and the writer (``HookWriter.open``), then the start-up checks;
    drained at the end."""
    cfg, writer, checkpointer = app[CONFIG], app[WRITER], app[CHECKPOINTER]
    loop = asyncio.get_running_loop()
    checkpointer.start()
    try:
        await writer.open(loop)
    except BaseException:
        checkpointer.stop()
        raise
    log.info("writer_started", db=str(cfg.db_path))
    check = asyncio.create_task(checks.check_at_start(cfg.db_path, app[HEALTH], app[STOP]))
    yield
    app[STOP].set()
    await check
    await loop.run_in_executor(None, writer.stop)
    await loop.run_in_executor(None, checkpointer.stop)
    log.info(
        "writer_stopped",
        rows=writer.committed_rows,
        batches=writer.committed_batches,
        deliveries_per_commit=round(writer.committed_deliveries / max(1, writer.committed_batches), 2),
    )


def _tailer_ctx(
    clock: Callable[[], int], changes: ChangeSource, ingest: IngestFn | None, guard: FileGuard | None
) -> Ctx:
    """The tailer (catch-up, then follow) on its own ingest thread and connection."""

    async def tailer_ctx(app: web.Application) -> AsyncIterator[None]:
        cfg, health, checkpointer = app[CONFIG], app[HEALTH], app[CHECKPOINTER]
        waits = app[LOCK_WAITS]
        runner: IngestRunner | None = None
        run_ingest: IngestFn
        if ingest is None:
            run_ingest = runner = IngestRunner(
                lambda: checkpointer.attach(_open_write_conn(cfg.db_path, guard, health, health_mod.TAILER)),
                cfg.projects,
                clock=clock,
                max_line_bytes=cfg.max_line_bytes,
                report=health,
                contended=waits.recent,
            )
        else:
            run_ingest = ingest
        tailer = app[TAILER] = Tailer(
            cfg.projects,
            run_ingest,
            changes=changes,
            rescan_interval_s=cfg.rescan_interval_s,
            health=health,
        )
        task = asyncio.create_task(tailer.run(app[STOP])) if cfg.tail and cfg.projects else None
        yield
        app[STOP].set()
        await jobs.cancel(task)
        if runner is not None:
            await asyncio.get_running_loop().run_in_executor(None, runner.close)

    return tailer_ctx


def _file_guard_ctx(file_guard: FileGuard, then: Callable[[], None] | None) -> Ctx:
    """The database file checked every second (``fileguard.watch``); once lost, the WAL folded into
    the old file (on the writer's thread) and ``then`` called."""

    async def file_guard_ctx(app: web.Application) -> AsyncIterator[None]:
        async def lost(_why: str) -> None:
            try:
                await app[WRITER].call(fileguard.fold_wal)
            except Exception as e:  # the old file refusing it (deleted, full) leaves nothing to fold
                log.warning("wal_not_folded", error=str(e))
            if then is not None:
                then()

        task = asyncio.create_task(fileguard.watch(file_guard, app[HEALTH], app[STOP], lost))
        yield
        app[STOP].set()
        await jobs.cancel(task)

    return file_guard_ctx


def _watchdog_ctx(clock: Callable[[], int]) -> Ctx:
    """The watchdog tick every ``watchdog_interval_s`` with the daemon's one window."""

    async def watchdog_ctx(app: web.Application) -> AsyncIterator[None]:
        cfg = app[CONFIG]
        task = asyncio.create_task(
            jobs.watchdog_loop(
                app[WRITER],
                clock,
                window_s=cfg.watchdog_window_s,
                interval_s=cfg.watchdog_interval_s,
                stop=app[STOP],
            )
        )
        yield
        app[STOP].set()
        await jobs.cancel(task)

    return watchdog_ctx


async def _schedule_ctx(app: web.Application) -> AsyncIterator[None]:
    """Scheduled prune and backup (``ingestd.daemon.jobs.schedule_loop``), unless ``cfg.schedule`` is off."""
    cfg = app[CONFIG]
    # The first backup waits for the start-up backfill: taken before it, it would be a copy of
    # an empty database, shown as "last backup" for a day.
    backfilled = app[TAILER].caught_up if cfg.tail and cfg.projects else None
    task = asyncio.create_task(jobs.schedule_loop(cfg, app[STOP], backfilled)) if cfg.schedule else None
    yield
    app[STOP].set()
    await jobs.cancel(task)


async def _ship_ctx(app: web.Application) -> AsyncIterator[None]:
    """Team-mode shipping (``ingestd.daemon.jobs.ship_loop``; idle without ``ship_to``)."""
    task = asyncio.create_task(jobs.ship_loop(app[CONFIG], app[STOP], app[HEALTH]))
    yield
    app[STOP].set()
    await jobs.cancel(task)


async def _probe_ctx(app: web.Application) -> AsyncIterator[None]:
    """A failing writer probed until it writes again (``ingestd.daemon.hookwriter``)."""
    task = asyncio.create_task(hookwriter.probe_loop(app[WRITER], app[HEALTH], app[STOP]))
    yield
    app[STOP].set()
    await jobs.cancel(task)
