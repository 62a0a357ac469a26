"""``ingestd serve``: the daemon (SPEC §9, §10)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from pathlib import Path

import click

from ingestd import settings as settings_mod
from ingestd.commands._common import db_option, default_projects, projects_option, resolve_db
from ingestd.http import auth, guard
from ingestd.http.app import DEFAULT_PORT, ServeConfig, serve
from ingestd.http.conns import ConnLimits
from ingestd.http.hooks import HookConfig
from ingestd.logs import configure, forward_sqlite_log
from ingestd.store import stall

# The option defaults are the configuration's own, so the two cannot drift apart.
_HOOKS = HookConfig()
_SERVE = {f.name: f.default for f in dataclasses.fields(ServeConfig)}


def register(cli: click.Group) -> None:
    @cli.command("serve")
    @db_option
    @projects_option
    @click.option(
        "--host", default=_SERVE["host"], show_default=True, help="Bind address (non-loopback needs a token)."
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
        default=_HOOKS.max_body_bytes,
        show_default=True,
        help="Larger hook bodies get 413.",
    )
    @click.option(
        "--hook-timeout-ms",
        type=click.IntRange(min=1),
        default=_HOOKS.hook_timeout_ms,
        show_default=True,
        help="Answer 503 past this.",
    )
    @click.option(
        "--watchdog-window-s",
        type=click.FloatRange(min=1),
        default=_SERVE["watchdog_window_s"],
        show_default=True,
        help="Idle time to unknown.",
    )
    @click.option(
        "--watchdog-interval-s",
        type=click.FloatRange(min=0.1),
        default=_SERVE["watchdog_interval_s"],
        show_default=True,
    )
    @click.option(
        "--rescan-interval-s", type=click.FloatRange(min=0.1), default=_SERVE["rescan_interval_s"], show_default=True
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
        configure(level=log_level, force=True)  # the CLI configured the default level already
        forward_sqlite_log()
        env = dict(os.environ)
        token = auth.load_token(env_name=token_env, file=token_file, env=env)
        settings = settings_mod.load({}, env)
        cfg = ServeConfig(
            db_path=resolve_db(db_path),
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
            asyncio.run(serve(cfg))
        finally:
            stall.mirror_to(None)
