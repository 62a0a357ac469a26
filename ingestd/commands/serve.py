"""``ingestd serve``: the daemon (SPEC §9, §10).

The lock and the port are taken before the daemon's modules (aiohttp, the writer, the projector)
are even imported: a second daemon or a taken port is reported in the time Python takes to start
(issue 15). The option defaults below are therefore written out, not read from ``ServeConfig`` /
``HookConfig``; ``tests/daemon/test_startup_order.py`` pins them equal.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import click

from ingestd import settings as settings_mod
from ingestd.commands._common import db_option, default_projects, projects_option, resolve_db
from ingestd.daemon import lock
from ingestd.daemon.bind import DEFAULT_PORT, bind_socket
from ingestd.http import auth

# Equal to ServeConfig's and HookConfig's defaults (pinned by a test).
DEFAULTS = {
    "host": "127.0.0.1",
    "max_body_bytes": 1 << 20,
    "hook_timeout_ms": 2000,
    "watchdog_window_s": 600.0,
    "watchdog_interval_s": 30.0,
    "rescan_interval_s": 60.0,
}


def register(cli: click.Group) -> None:
    @cli.command("serve")
    @db_option
    @projects_option
    @click.option(
        "--host", default=DEFAULTS["host"], show_default=True, help="Bind address (non-loopback needs a token)."
    )
    @click.option(
        "--port",
        type=click.IntRange(0, 65535),
        default=DEFAULT_PORT,
        show_default=True,
        envvar="INGESTD_PORT",
        help="TCP port.",
    )
    @click.option("--token-env", default=None, metavar="NAME", help="Read the bearer token from this env variable.")
    @click.option(
        "--token-file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Read the bearer token from this file.",
    )
    @click.option(
        "--max-body-bytes",
        type=click.IntRange(min=1),
        default=DEFAULTS["max_body_bytes"],
        show_default=True,
        help="Larger hook bodies get 413.",
    )
    @click.option(
        "--hook-timeout-ms",
        type=click.IntRange(min=1),
        default=DEFAULTS["hook_timeout_ms"],
        show_default=True,
        help="Answer 503 past this.",
    )
    @click.option(
        "--watchdog-window-s",
        type=click.FloatRange(min=1),
        default=DEFAULTS["watchdog_window_s"],
        show_default=True,
        help="Idle time to unknown.",
    )
    @click.option(
        "--watchdog-interval-s",
        type=click.FloatRange(min=0.1),
        default=DEFAULTS["watchdog_interval_s"],
        show_default=True,
    )
    @click.option(
        "--rescan-interval-s", type=click.FloatRange(min=0.1), default=DEFAULTS["rescan_interval_s"], show_default=True
    )
    @click.option("--no-tail", is_flag=True, help="Receive hooks only; do not read transcripts.")
    @click.option("--log-level", default="info", show_default=True)
    def serve_cmd(
        db_path: Path | None,
        projects: tuple[Path, ...],
        host: str,
        port: int,
        token_env: str | None,
        token_file: Path | None,
        max_body_bytes: int,
        hook_timeout_ms: int,
        watchdog_window_s: float,
        watchdog_interval_s: float,
        rescan_interval_s: float,
        no_tail: bool,
        log_level: str,
    ) -> None:
        """Run the daemon: hook receiver on POST /hooks, transcript tailer, watchdog, read API.

        Binds 127.0.0.1:7391 by default. SIGINT/SIGTERM drain, commit and exit.
        """
        env = dict(os.environ)
        token = auth.load_token(env_name=token_env, file=token_file, env=env)
        auth.check_bind(host, token)
        settings = settings_mod.load({}, env)
        db = resolve_db(db_path)
        held = lock.acquire(db)
        try:
            sock = bind_socket(host, port)
        except BaseException:
            held.release()
            raise
        # Only now the daemon itself (a second or more of imports on a loaded machine).
        from ingestd.http import guard
        from ingestd.http.app import ServeConfig, serve
        from ingestd.http.conns import ConnLimits
        from ingestd.http.hooks import HookConfig
        from ingestd.logs import configure, forward_sqlite_log
        from ingestd.store import stall

        configure(level=log_level, force=True)  # the CLI configured the default level already
        forward_sqlite_log()
        cfg = ServeConfig(
            db_path=db,
            projects=tuple(projects) if projects else tuple(default_projects(env)),
            host=host,
            port=port,
            token=token,
            hooks=HookConfig(
                max_body_bytes=max_body_bytes,
                hook_timeout_ms=hook_timeout_ms,
                body_timeout_ms=max(1, settings.get_int("body_timeout_ms")),
            ),
            watchdog_window_s=watchdog_window_s,
            watchdog_interval_s=watchdog_interval_s,
            rescan_interval_s=rescan_interval_s,
            tail=not no_tail,
            max_line_bytes=settings.get_int("max_line_bytes"),
            allowed_hosts=tuple(guard.split_list(settings.get_opt_str("allowed_hosts"))),
            allowed_origins=tuple(guard.split_list(settings.get_opt_str("allowed_origins"))),
            conns=ConnLimits(
                header_timeout_s=max(1, settings.get_int("header_timeout_ms")) / 1000,
                keepalive_timeout_s=max(1, settings.get_int("keepalive_timeout_ms")) / 1000,
                max_connections=max(1, settings.get_int("max_connections")),
            ),
            stall_after_s=max(1, settings.get_int("stall_after_ms")) / 1000,
            backup_dir=Path(b) if (b := settings.get_opt_str("backup_dir")) else None,
        )
        # The writer thread shares the GIL with the loop: a short switch interval keeps a
        # commit from waiting up to 5 ms (the default) for the loop to yield.
        sys.setswitchinterval(0.001)
        stall.mirror_to(cfg.db_path)  # so `ingestd status` can show a stalled writer
        try:
            asyncio.run(serve(cfg, held=held, sock=sock))
        finally:
            stall.mirror_to(None)
