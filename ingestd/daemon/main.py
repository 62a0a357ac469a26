"""The daemon's entry point: lock, port, database preparation, signals (``ingestd serve``).

``run`` is what the command calls once it holds the lock and the bound port: it configures
logging and runs ``serve`` in ``asyncio.run``. ``serve``
takes the single-instance lock and binds the port before any database work (so either failure
is reported at once), prepares the database (``prepare_db``: migrations, re-projection, the
watchdog window logged), builds the app (``ingestd.daemon.root.assemble``), listens through the
connection guard, and on SIGINT/SIGTERM/SIGHUP stops accepting, drains the writer, commits and closes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import socket
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

from aiohttp import web

from ingestd.core.watchdog import watchdog_row
from ingestd.daemon import checks, presence
from ingestd.daemon import lock as lock_mod
from ingestd.daemon.bind import bind_socket
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.fileguard import FileGuard
from ingestd.daemon.jobs import cancel
from ingestd.daemon.root import assemble
from ingestd.errors import DaemonError
from ingestd.http import auth
from ingestd.http.conns import ConnectionGuard, ConnLimits
from ingestd.http.parseerrors import json_errors
from ingestd.logs import get_logger
from ingestd.projection.reproject import ensure_current
from ingestd.store.connection import connect
from ingestd.store.identity import database_identity
from ingestd.store.migrate import migrate
from ingestd.store.watchdog_pass import effective_window
from ingestd.store.writer import apply_batch

log = get_logger("ingestd.serve")


def prepare_db(cfg: ServeConfig) -> None:
    """Once, before any writer starts: migrate, re-project if the projector's rules changed, log the window.

    The window is part of the log (DESIGN.md "Status"): when the one in force differs from the
    daemon's ``watchdog_window_s``, a ``watchdog`` row records it, so every writer of this daemon,
    ``ingest`` and ``replay`` apply it from then on. Writes the database.
    """
    conn = connect(cfg.db_path)
    try:
        migrate(conn)
        ctx = database_identity(conn)
        done = ensure_current(conn, cfg.db_path, ctx=ctx, watchdog_window_s=int(cfg.watchdog_window_s))
        if done is not None and done.log_rows:
            # resumed_log_rows: of log_rows, those an interrupted re-projection had folded already
            log.info(
                "reprojected",
                log_rows=done.log_rows,
                resumed_log_rows=done.resumed_rows,
                reason="the projector's rules changed",
            )
        if effective_window(conn) != max(1, int(cfg.watchdog_window_s)):
            apply_batch(conn, [watchdog_row(time.time_ns(), cfg.watchdog_window_s)], ctx=ctx)
    finally:
        conn.close()


def connection_cap(wanted: int, nofile_soft: int) -> int:
    """The connection cap: ``wanted``, kept below the open-file limit with room for the database, its
    WAL, the logs (64) and the connections one turn of accepts can take past the cap (the listen
    backlog, ``ConnLimits.backlog``)."""
    return max(8, min(wanted, nofile_soft - 64 - min(128, wanted)))


def run(cfg: ServeConfig, *, held: lock_mod.DaemonLock, sock: socket.socket, log_level: str) -> None:
    """Run the daemon in this process until a signal (``ingestd serve``, after the lock and the port).

    Side effects: reconfigures logging at ``log_level``, forwards SQLite's log.
    """
    from ingestd.logs import configure, forward_sqlite_log

    configure(level=log_level, force=True)  # the CLI configured the default level already
    forward_sqlite_log()
    # The writer thread shares the GIL with the loop: a short switch interval keeps a
    # commit from waiting up to 5 ms (the default) for the loop to yield.
    sys.setswitchinterval(0.001)
    with asyncio.Runner(loop_factory=loop_factory(cfg.event_loop)) as runner:
        runner.run(serve(cfg, held=held, sock=sock))


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop the ``event_loop`` setting names (None: asyncio's own)."""
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return None


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
        held: the lock, already taken (``ingestd serve`` takes it before importing this module,
            after checking the files); without it, the files are checked and the lock taken here.
        sock: the bound socket (``ingestd.daemon.bind.bind_socket``), likewise.

    Raises:
        DaemonError: another daemon holds the database, or the port is taken.
        ConfigError: a non-loopback bind without a token; a ``ship_to`` that is not a store URL
            or holds a password; an unsafe file (``check_files``, when ``held`` is not given).
    """
    try:
        auth.check_bind(cfg.host, cfg.token)
        checks.check_ship_to(cfg.settings.get_opt_str("ship_to"))
        if held is None:  # whoever takes the lock checks the files first (``ingestd serve`` did)
            checks.check_files(cfg.db_path, cfg.backup_dir)
            held = lock_mod.acquire(cfg.db_path)
    except BaseException:
        # what ``ingestd serve`` took already is given back on a refusal
        if sock is not None:
            sock.close()
        if held is not None:
            held.release()
        raise
    try:
        sock = sock if sock is not None else bind_socket(cfg.host, cfg.port)
        guard = FileGuard(cfg.db_path, held.identity)
        try:
            await _serve_on(cfg, sock, ready, guard)
        finally:
            sock.close()
    finally:
        held.release()
    log.info("stopped")
    if guard.lost is not None:
        raise DaemonError(guard.lost, path=str(cfg.db_path))


def _limits(cfg: ServeConfig) -> ConnLimits:
    """The connection limits, the cap kept below the process's open-file limit."""
    import resource

    limits = cfg.conns
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    cap = connection_cap(limits.max_connections, soft if soft != resource.RLIM_INFINITY else 1 << 20)
    if cap != limits.max_connections:
        log.warning("max_connections_lowered", wanted=limits.max_connections, used=cap, open_files_limit=soft)
        limits = dataclasses.replace(limits, max_connections=cap)
    return limits


async def _until_signal(cfg: ServeConfig, port: int, stop: asyncio.Event, ready: Callable[[int], None] | None) -> None:
    """Say the daemon is listening (state file, log, ``ready``), then wait for SIGINT/SIGTERM."""
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
    loop = asyncio.get_running_loop()
    # SIGHUP too: closing the terminal of a foreground `serve` (or the end of its shell job) sent
    # it, and the daemon died without its clean stop (state file and lock left, requests reset)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting_down")


async def _serve_on(
    cfg: ServeConfig, sock: socket.socket, ready: Callable[[int], None] | None, guard: FileGuard
) -> None:
    """Prepare the database, listen on the bound ``sock`` through the connection guard, serve until a
    signal or until ``guard`` finds the database path no longer names the file (``fileguard.watch``)."""
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, prepare_db, cfg)
    limits = _limits(cfg)
    conns = ConnectionGuard(limits)
    stop = asyncio.Event()
    app = assemble(cfg, conns=conns, file_guard=guard, on_file_lost=stop.set)
    # aiohttp's own keep-alive timer is a backstop behind the guard's.
    runner = web.AppRunner(app, access_log=None, handle_signals=False, keepalive_timeout=limits.keepalive_timeout_s + 1)
    await runner.setup()
    loop.set_exception_handler(conns.exception_handler)
    server: asyncio.Server | None = None
    otlp_server: asyncio.Server | None = None
    sweeper = asyncio.create_task(conns.run(stop))
    try:
        assert runner.server is not None
        handlers = json_errors(runner.server)  # aiohttp's own 400s (a header over 8 KiB) in the JSON shape
        server = await loop.create_server(conns.protocol_factory(handlers), sock=sock, backlog=limits.backlog)
        if cfg.otlp_port:
            # OTLP exporters' default port (4318), for a collector-less setup that names no port: the
            # same app and guard (its Host, Origin and token rules) on a second socket
            otlp_sock = bind_socket(cfg.host, cfg.otlp_port)
            otlp_server = await loop.create_server(
                conns.protocol_factory(handlers), sock=otlp_sock, backlog=limits.backlog
            )
            log.info("otlp_listening", port=int(otlp_sock.getsockname()[1]))
        await _until_signal(cfg, int(sock.getsockname()[1]), stop, ready)
    finally:
        stop.set()
        await cancel(sweeper)
        if otlp_server is not None:
            otlp_server.close()
        if server is not None:
            server.close()
        await runner.cleanup()
        presence.write_stopped(cfg.db_path, now=datetime.now(UTC), reason=guard.lost)
