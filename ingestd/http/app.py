"""The app factory (``make_app``): routes, middlewares and the daemon's background work.

``make_app`` wires the hook receiver, the read API (``ingestd.http.api``), the live view
(``ingestd.http.web``: the page; ``ingestd.http.live``: its event stream)
and the background work, each started and stopped in ``cleanup_ctx``: the writer
thread first (so everything else can write), then the tailer (catch-up, then follow),
the watchdog, the scheduled retention jobs (whose first run waits for the catch-up) and
shipping (``ingestd.daemon.jobs``). The process around it (lock, port, database preparation,
signals) is ``ingestd.daemon.main``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import apsw
from aiohttp import web

from ingestd.daemon import apply as apply_mod
from ingestd.daemon import checks, jobs, watchdog, writeprobe
from ingestd.daemon import health as health_mod
from ingestd.daemon.committer import ApplyFn, Committer, HookWriter
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.health import Health
from ingestd.daemon.ingestrun import IngestRunner
from ingestd.daemon.tailer import ChangeSource, IngestFn, Tailer, watch_changes
from ingestd.daemon.walcheckpoint import WalCheckpointer
from ingestd.daemon.writerproc import ProcCommitter
from ingestd.http import auth, guard
from ingestd.http.api import HEALTH, add_api_routes
from ingestd.http.conns import ConnectionGuard
from ingestd.http.hooks import Receipts, error_response, make_handler
from ingestd.http.live import add_live_routes
from ingestd.http.web import add_page_routes
from ingestd.logs import get_logger
from ingestd.store import stall
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate

log = get_logger("ingestd.serve")

HOOK_PATHS = ("/hooks", "/hook")

CONFIG = web.AppKey("config", ServeConfig)
WRITER = web.AppKey("writer", HookWriter)
TAILER = web.AppKey("tailer", Tailer)
STOP = web.AppKey("stop", asyncio.Event)
CHECKPOINTER = web.AppKey("checkpointer", WalCheckpointer)


def _open_write_conn(db_path: Path) -> apsw.Connection:
    conn = connect(db_path)
    migrate(conn)
    return conn


def _shaped(e: web.HTTPException) -> web.Response:
    """An aiohttp error (404, 405, ...) in the one JSON error shape."""
    code = (e.reason or "error").lower().replace(" ", "_")
    resp = error_response(e.status, code, e.reason or "error")
    if "Allow" in e.headers:  # a 405 says which methods the path takes (RFC 9110 §15.5.6)
        resp.headers["Allow"] = e.headers["Allow"]
    return resp


def _front(cfg: ServeConfig, conns: ConnectionGuard | None) -> Any:
    """The app's one middleware (one layer around every route, the hooks' included), in this order:
    the connection guard's request tracking (when ``conns`` is given: ``serve``); the Host and
    Origin rules (``ingestd.http.guard``: 421, 403); the token (when one is configured: 401); every
    aiohttp error the handler raises (404, 405, ...) in the one JSON error shape.

    Raises:
        ConfigError: an ``allowed_origins`` item is not an origin.
    """
    refusal = guard.checker(guard.make_policy(cfg.host, cfg.port, cfg.allowed_hosts, cfg.allowed_origins))
    token = cfg.token
    started = conns.started if conns is not None else None
    finished = conns.finished if conns is not None else None

    @web.middleware
    async def front(request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        transport = request.transport
        if started is not None:
            started(transport)
        try:
            refused = refusal(request)
            if refused is not None:
                return refused
            if token is not None and not auth.token_ok(token, auth.presented_token(request.headers)):
                log.warning("request_rejected", status=401, reason="unauthorized", path=request.path)
                return error_response(401, "unauthorized", "missing or wrong token")
            resp: web.StreamResponse = await handler(request)
            return resp
        except web.HTTPException as e:
            if e.status < 400:
                raise
            return _shaped(e)
        finally:
            if finished is not None:
                finished(transport)

    return front


def make_app(
    cfg: ServeConfig,
    *,
    apply: ApplyFn | None = None,
    clock: Callable[[], int] = time.time_ns,
    changes: ChangeSource = watch_changes,
    ingest: IngestFn | None = None,
    conns: ConnectionGuard | None = None,
) -> web.Application:
    """The application; background work starts when it starts (``cleanup_ctx``).

    Args:
        cfg: the configuration.
        apply: what the writer runs per grouped transaction (tests inject failures).
        clock: ns since the epoch, for the watchdog.
        changes: the tailer's change source.
        ingest: override the tailer's ingest function (tests); default the ingest code.
        conns: the connection guard ``serve`` wraps the listening socket's connections in.

    Raises:
        ConfigError: an ``allowed_origins`` item is not an origin.
    """
    # The receiver checks the size itself (JSON 413); aiohttp's cap is a backstop.
    app = web.Application(middlewares=[_front(cfg, conns)], client_max_size=cfg.hooks.max_body_bytes + 1)
    app[CONFIG] = cfg
    app[STOP] = asyncio.Event()
    health = app[HEALTH] = Health(cfg.stall_after_s, mirror=stall.mirror_path(cfg.db_path))
    # Both write connections (hooks, tailer) leave WAL checkpoints to this thread.
    checkpointer = app[CHECKPOINTER] = WalCheckpointer(lambda: connect(cfg.db_path))
    writer = app[WRITER] = _make_writer(cfg, apply, health, checkpointer)
    handler = make_handler(writer, cfg.hooks, Receipts())
    for path in HOOK_PATHS:
        app.router.add_post(path, handler)
    app.cleanup_ctx.extend(
        [_writer_ctx, _tailer_ctx(clock, changes, ingest), _watchdog_ctx(clock), _schedule_ctx, _ship_ctx, _probe_ctx]
    )
    add_api_routes(app, db_path=cfg.db_path)
    add_live_routes(app, cfg.db_path)
    add_page_routes(app)
    return app


def _make_writer(cfg: ServeConfig, apply: ApplyFn | None, health: Health, checkpointer: WalCheckpointer) -> HookWriter:
    """A writer process (``cfg.hook_writer == "process"``), else the thread; an injected ``apply``
    (tests) runs on the thread, in this process."""
    if apply is None and cfg.hook_writer == "process":
        return ProcCommitter(cfg.db_path, health=health, log_level=cfg.settings.get_str("log_level"))
    return Committer(
        lambda: checkpointer.attach(_open_write_conn(cfg.db_path)),
        apply if apply is not None else apply_mod.make_store(),
        health=health,
    )


async def _writer_ctx(app: web.Application) -> AsyncIterator[None]:
    """The checkpointer and the writer (thread or process: ``HookWriter.open``), then the start-up checks;
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


Ctx = Callable[[web.Application], AsyncIterator[None]]


def _tailer_ctx(clock: Callable[[], int], changes: ChangeSource, ingest: IngestFn | None) -> Ctx:
    """The tailer (catch-up, then follow) on its own ingest thread and connection."""

    async def tailer_ctx(app: web.Application) -> AsyncIterator[None]:
        cfg, health, checkpointer = app[CONFIG], app[HEALTH], app[CHECKPOINTER]
        runner: IngestRunner | None = None
        run_ingest: IngestFn
        if ingest is None:
            run_ingest = runner = IngestRunner(
                lambda: checks.report_commits(
                    checkpointer.attach(_open_write_conn(cfg.db_path)), health, health_mod.TAILER
                ),
                cfg.projects,
                clock=clock,
                max_line_bytes=cfg.max_line_bytes,
                report=health,
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


def _watchdog_ctx(clock: Callable[[], int]) -> Ctx:
    """The watchdog tick every ``watchdog_interval_s`` with the daemon's one window."""

    async def watchdog_ctx(app: web.Application) -> AsyncIterator[None]:
        cfg = app[CONFIG]
        task = asyncio.create_task(
            watchdog.run(
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
    task = asyncio.create_task(jobs.ship_loop(app[CONFIG], app[STOP]))
    yield
    app[STOP].set()
    await jobs.cancel(task)


async def _probe_ctx(app: web.Application) -> AsyncIterator[None]:
    """A failing writer probed until it writes again (``ingestd.daemon.writeprobe``)."""
    task = asyncio.create_task(writeprobe.run(app[WRITER], app[HEALTH], app[STOP]))
    yield
    app[STOP].set()
    await jobs.cancel(task)
