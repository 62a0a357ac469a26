"""The app factory and the daemon's lifetime (``ingestd serve``).

``make_app`` wires the hook receiver, the read API (``ingestd.http.api``), the live view
(``ingestd.http.web``: the page; ``ingestd.http.live``: its event stream)
and the background work, each started and stopped in ``cleanup_ctx``: the writer
thread first (so everything else can write), then the tailer (catch-up, then follow),
the watchdog and the scheduled retention jobs (whose first run waits for the catch-up).
``serve`` takes the single-instance lock and binds the port before any database work (so
either failure is reported at once), and on SIGINT/SIGTERM stops accepting, drains the
writer, commits and closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
from aiohttp import web

from ingestd.core.framing import MAX_LINE_BYTES
from ingestd.daemon import apply as apply_mod
from ingestd.daemon import checks, presence, watchdog
from ingestd.daemon import health as health_mod
from ingestd.daemon import lock as lock_mod
from ingestd.daemon.bind import DEFAULT_PORT, bind_socket
from ingestd.daemon.committer import ApplyFn, Committer
from ingestd.daemon.health import Health
from ingestd.daemon.ingestrun import IngestRunner
from ingestd.daemon.tailer import ChangeSource, IngestFn, Tailer, watch_changes
from ingestd.daemon.walcheckpoint import WalCheckpointer
from ingestd.errors import IngestdError
from ingestd.http import auth, guard
from ingestd.http.api import HEALTH, add_api_routes
from ingestd.http.conns import ConnectionGuard, ConnLimits
from ingestd.http.hooks import HookConfig, Receipts, error_response, make_handler
from ingestd.http.live import add_live_routes
from ingestd.http.web import add_page_routes
from ingestd.ingest.reproject import ensure_current
from ingestd.logs import get_logger
from ingestd.store.connection import connect
from ingestd.store.identity import database_identity
from ingestd.store.migrate import migrate
from ingestd.store.watchdog_pass import effective_window
from ingestd.store.writer import apply_batch

log = get_logger("ingestd.serve")

HOOK_PATHS = ("/hooks", "/hook")


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """Everything ``serve`` needs.

    Attributes:
        db_path: Path, the database file.
        projects: tuple of Paths, projects roots to tail (empty: hooks only).
        host: str, bind address (loopback unless a token is set).
        port: int, TCP port (0 picks a free one: tests).
        token: str | None, bearer token; excluded from repr so it is never logged.
        hooks: HookConfig, receiver limits.
        watchdog_window_s: float, inactivity before an agent becomes unknown.
        watchdog_interval_s: float, seconds between watchdog ticks.
        rescan_interval_s: float, seconds between safety-net rescans of the roots.
        tail: bool, run the tailer (catch-up + follow).
        schedule: bool, run the scheduled prune and backup.
        max_line_bytes: int, longer transcript lines are logged as oversized markers.
        allowed_hosts: tuple of str, extra names accepted in ``Host`` (setting ``allowed_hosts``).
        allowed_origins: tuple of str, extra origins accepted in ``Origin`` (setting ``allowed_origins``).
        conns: ConnLimits, header / keep-alive timeouts and the connection cap.
        stall_after_s: float, a writer or tailer stuck this long makes ``/api/health`` 503.
        backup_dir: Path | None, where backups go (checked with the database's files; None: the default).
    """

    db_path: Path
    projects: tuple[Path, ...] = ()
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = field(default=None, repr=False)
    hooks: HookConfig = field(default_factory=HookConfig)
    watchdog_window_s: float = 600.0
    watchdog_interval_s: float = 30.0
    rescan_interval_s: float = 60.0
    tail: bool = True
    schedule: bool = True
    max_line_bytes: int = MAX_LINE_BYTES
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    conns: ConnLimits = field(default_factory=ConnLimits)
    stall_after_s: float = 5.0
    backup_dir: Path | None = None


CONFIG = web.AppKey("config", ServeConfig)
WRITER = web.AppKey("writer", Committer)
TAILER = web.AppKey("tailer", Tailer)
STOP = web.AppKey("stop", asyncio.Event)


def _prepare_db(cfg: ServeConfig) -> None:
    """Once, before any writer starts: migrate, re-project if the projector's rules changed, log the window."""
    conn = connect(cfg.db_path)
    try:
        migrate(conn)
        ctx = database_identity(conn)
        folded = ensure_current(conn, cfg.db_path, ctx=ctx, watchdog_window_s=int(cfg.watchdog_window_s))
        if folded:
            log.info("reprojected", log_rows=folded, reason="the projector's rules changed")
        if effective_window(conn) != max(1, int(cfg.watchdog_window_s)):
            # The window is part of the log, so `ingest` and `replay` apply this one too.
            apply_batch(conn, [watchdog.watchdog_row(time.time_ns(), cfg.watchdog_window_s)], ctx=ctx)
    finally:
        conn.close()


def _open_write_conn(db_path: Path) -> apsw.Connection:
    conn = connect(db_path)
    migrate(conn)
    return conn


def _auth_middleware(token: str) -> Any:
    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        if not auth.token_ok(token, auth.presented_token(request.headers)):
            log.warning("request_rejected", status=401, reason="unauthorized", path=request.path)
            return error_response(401, "unauthorized", "missing or wrong token")
        resp: web.StreamResponse = await handler(request)
        return resp

    return check


@web.middleware
async def _error_shape(request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
    """Every aiohttp error (404, 405, ...) in the one JSON error shape."""
    try:
        resp: web.StreamResponse = await handler(request)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        code = (e.reason or "error").lower().replace(" ", "_")
        resp = error_response(e.status, code, e.reason or "error")
        if "Allow" in e.headers:  # a 405 says which methods the path takes (RFC 9110 §15.5.6)
            resp.headers["Allow"] = e.headers["Allow"]
        return resp
    return resp


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

    Middlewares, outermost first: the one error shape; the connection guard's request tracking
    (when ``conns`` is given: ``serve``); the Host and Origin rules (``ingestd.http.guard``, every
    route); the token (when one is configured).

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
    policy = guard.make_policy(cfg.host, cfg.port, cfg.allowed_hosts, cfg.allowed_origins)
    middlewares: list[Any] = [_error_shape]
    if conns is not None:
        middlewares.append(conns.middleware())
    middlewares.append(guard.middleware(policy))
    if cfg.token is not None:
        middlewares.append(_auth_middleware(cfg.token))
    # The receiver checks the size itself (JSON 413); aiohttp's cap is a backstop.
    app = web.Application(middlewares=middlewares, client_max_size=cfg.hooks.max_body_bytes + 1)
    app[CONFIG] = cfg
    app[STOP] = asyncio.Event()
    health = app[HEALTH] = Health(cfg.stall_after_s)
    if apply is None:
        apply = apply_mod.make_store(watchdog_window_s=int(cfg.watchdog_window_s))
    # Both write connections (hooks, tailer) leave WAL checkpoints to this thread.
    checkpointer = WalCheckpointer(lambda: connect(cfg.db_path))
    writer = Committer(lambda: checkpointer.attach(_open_write_conn(cfg.db_path)), apply, health=health)
    app[WRITER] = writer
    handler = make_handler(writer, cfg.hooks, Receipts())
    for path in HOOK_PATHS:
        app.router.add_post(path, handler)

    async def writer_ctx(app: web.Application) -> AsyncIterator[None]:
        checkpointer.start()
        try:
            writer.start(asyncio.get_running_loop())
        except BaseException:
            checkpointer.stop()
            raise
        log.info("writer_started", db=str(cfg.db_path))
        check = asyncio.create_task(checks.check_at_start(cfg.db_path, health, app[STOP]))
        yield
        app[STOP].set()
        await check
        await asyncio.get_running_loop().run_in_executor(None, writer.stop)
        await asyncio.get_running_loop().run_in_executor(None, checkpointer.stop)
        log.info(
            "writer_stopped",
            rows=writer.committed_rows,
            batches=writer.committed_batches,
            deliveries_per_commit=round(writer.committed_deliveries / max(1, writer.committed_batches), 2),
        )

    async def tailer_ctx(app: web.Application) -> AsyncIterator[None]:
        runner: IngestRunner | None = None
        run_ingest: IngestFn
        if ingest is None:
            run_ingest = runner = IngestRunner(
                lambda: checks.report_commits(
                    checkpointer.attach(_open_write_conn(cfg.db_path)), health, health_mod.TAILER
                ),
                cfg.projects,
                clock=clock,
                watchdog_window_s=int(cfg.watchdog_window_s),
                max_line_bytes=cfg.max_line_bytes,
            )
        else:
            run_ingest = ingest
        tailer = Tailer(
            cfg.projects, run_ingest, changes=changes, rescan_interval_s=cfg.rescan_interval_s, health=health
        )
        app[TAILER] = tailer
        task = asyncio.create_task(tailer.run(app[STOP])) if cfg.tail and cfg.projects else None
        yield
        app[STOP].set()
        await _cancel(task)
        if runner is not None:
            await asyncio.get_running_loop().run_in_executor(None, runner.close)

    async def watchdog_ctx(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(
            watchdog.run(
                writer,
                clock,
                window_s=cfg.watchdog_window_s,
                interval_s=cfg.watchdog_interval_s,
                stop=app[STOP],
            )
        )
        yield
        app[STOP].set()
        await _cancel(task)

    async def schedule_ctx(app: web.Application) -> AsyncIterator[None]:
        # The first backup waits for the start-up backfill: taken before it, it would be a copy of
        # an empty database, shown as "last backup" for a day.
        backfilled = app[TAILER].caught_up if cfg.tail and cfg.projects else None
        task = asyncio.create_task(_schedule_loop(cfg, app[STOP], backfilled)) if cfg.schedule else None
        yield
        app[STOP].set()
        await _cancel(task)

    async def ship_ctx(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(_ship_loop(cfg, app[STOP]))
        yield
        app[STOP].set()
        await _cancel(task)

    app.cleanup_ctx.extend([writer_ctx, tailer_ctx, watchdog_ctx, schedule_ctx, ship_ctx])
    add_api_routes(app, db_path=cfg.db_path)
    add_live_routes(app, cfg.db_path)
    add_page_routes(app)
    return app


async def _cancel(task: asyncio.Task[None] | None) -> None:
    """Cancel a background task (None: it was never started) and wait until it has ended."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _schedule_loop(cfg: ServeConfig, stop: asyncio.Event, backfilled: asyncio.Event | None = None) -> None:
    """Daily prune and backup (``ingestd.retention.schedule``), blocking work off the loop.

    Args:
        backfilled: set when the start-up backfill has ended; the first run waits for it (None: no wait).
    """
    from ingestd import settings as settings_mod
    from ingestd.retention import schedule

    loop = asyncio.get_running_loop()
    if backfilled is not None and not backfilled.is_set():
        log.info("schedule_waiting", reason="the start-up backfill runs first")
        waits = [asyncio.ensure_future(backfilled.wait()), asyncio.ensure_future(stop.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
    while not stop.is_set():
        try:
            resolved = settings_mod.load({}, dict(os.environ))
            await loop.run_in_executor(None, schedule.run_scheduled, cfg.db_path, resolved, datetime.now(UTC))
        except IngestdError as e:
            log.error("schedule_failed", error=e.message)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), schedule.CHECK_EVERY_S)


async def _ship_loop(cfg: ServeConfig, stop: asyncio.Event) -> None:
    """Team mode (SPEC §13): follow the ``ship_to`` setting, shipping the log batch by batch.

    Nothing to do when the setting is unset. Each pass ships a bounded number of batches off the
    loop; the next pass follows at once while more is pending, else after ``ship_interval_s``.
    A failed pass (store down, refused) is logged and retried after the interval.
    """
    from ingestd import settings as settings_mod

    resolved = settings_mod.load({}, dict(os.environ))
    url = resolved.get_opt_str("ship_to")
    if not url:
        return
    from ingestd.central.pg import describe
    from ingestd.central.ship import Shipper

    try:
        where = describe(url)
    except IngestdError as e:
        log.error("ship_disabled", error=e.message)  # e.g. a password in ship_to: never shipped, never logged
        return
    shipper = Shipper(str(cfg.db_path), url, batch_rows=resolved.get_int("ship_batch_rows"), max_batches=10)
    interval_s = max(1, resolved.get_int("ship_interval_s"))
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


def connection_cap(wanted: int, nofile_soft: int) -> int:
    """The connection cap: ``wanted``, kept below the open-file limit with room for the database, its
    WAL, the logs (64) and the connections one turn of accepts can take past the cap (the listen
    backlog, ``ConnLimits.backlog``)."""
    return max(8, min(wanted, nofile_soft - 64 - min(128, wanted)))


async def serve(
    cfg: ServeConfig,
    *,
    ready: Callable[[int], None] | None = None,
    held: lock_mod.DaemonLock | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Run the daemon until SIGINT/SIGTERM.

    Start-up order: the single-instance lock and the port first (each fails in milliseconds),
    only then the database work (migrations, re-projection), then the app. Once listening, the
    state file ``<db>.serve.json`` (``ingestd.daemon.presence``) says so; a clean stop marks it.

    Args:
        held: the lock, already taken (``ingestd serve`` takes it before importing this module).
        sock: the bound socket (``ingestd.daemon.bind.bind_socket``), likewise.

    Raises:
        DaemonError: another daemon holds the database, or the port is taken.
        ConfigError: a non-loopback bind without a token; an unsafe file (``check_files``).
    """
    try:
        auth.check_bind(cfg.host, cfg.token)
        checks.check_files(cfg.db_path, cfg.backup_dir)
        held = held if held is not None else lock_mod.acquire(cfg.db_path)
    except BaseException:
        # what ``ingestd serve`` took already is given back on a refusal
        if sock is not None:
            sock.close()
        if held is not None:
            held.release()
        raise
    try:
        sock = sock if sock is not None else bind_socket(cfg.host, cfg.port)
        try:
            await _serve_on(cfg, sock, ready)
        finally:
            sock.close()
    finally:
        held.release()
    log.info("stopped")


async def _serve_on(cfg: ServeConfig, sock: socket.socket, ready: Callable[[int], None] | None) -> None:
    """Prepare the database, listen on the bound ``sock`` through the connection guard, serve until a signal."""
    import resource

    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, _prepare_db, cfg)
    limits = cfg.conns
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    cap = connection_cap(limits.max_connections, soft if soft != resource.RLIM_INFINITY else 1 << 20)
    if cap != limits.max_connections:
        log.warning("max_connections_lowered", wanted=limits.max_connections, used=cap, open_files_limit=soft)
        limits = dataclasses.replace(limits, max_connections=cap)
    conns = ConnectionGuard(limits)
    app = make_app(cfg, conns=conns)
    # aiohttp's own keep-alive timer is a backstop behind the guard's.
    runner = web.AppRunner(app, access_log=None, handle_signals=False, keepalive_timeout=limits.keepalive_timeout_s + 1)
    await runner.setup()
    loop.set_exception_handler(conns.exception_handler)
    server: asyncio.Server | None = None
    stop = asyncio.Event()
    sweeper = asyncio.create_task(conns.run(stop))
    try:
        assert runner.server is not None
        server = await loop.create_server(conns.protocol_factory(runner.server), sock=sock, backlog=limits.backlog)
        port = int(sock.getsockname()[1])
        state = presence.write_started(cfg.db_path, host=cfg.host, port=port, now=datetime.now(UTC))
        log.info(
            "serving",
            host=cfg.host,
            port=port,
            db=str(cfg.db_path),
            projects=[str(p) for p in cfg.projects],
            state_file=str(state),
        )
        if ready is not None:
            ready(port)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        log.info("shutting_down")
    finally:
        stop.set()
        await _cancel(sweeper)
        if server is not None:
            server.close()
        await runner.cleanup()
        presence.write_stopped(cfg.db_path, now=datetime.now(UTC))
