"""``ingestd serve``: the daemon (SPEC §9, §10).

The lock and the port are taken before the daemon's modules (aiohttp, the writer, the projector)
are even imported: a second daemon or a taken port is reported in the time Python takes to start.
The settings are resolved here, once (flag → ``INGESTD_*`` → config file → default,
``ingestd.settings``), and handed to the daemon as its ``ServeConfig``; every flag below is
generated from the settings table, so each is also an environment variable and a config key.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from ingestd import settings as settings_mod
from ingestd.commands._common import (
    db_option,
    default_projects,
    load_settings,
    projects_option,
    refuse_config_dir_roots,
    refuse_overlapping_roots,
    resolve_db,
    setting_options,
)
from ingestd.commands._token import token_options
from ingestd.daemon import lock
from ingestd.daemon.bind import bind_socket
from ingestd.http import auth

# serve's own settings, in the order --help lists them (the others it reads have no flag)
FLAGS = (
    "host",
    "port",
    "otlp_port",
    "max_body_bytes",
    "hook_timeout_ms",
    "watchdog_window_s",
    "watchdog_interval_s",
    "rescan_interval_s",
    "log_level",
)


@click.command("serve")
@db_option
@projects_option
@setting_options(*FLAGS)
@token_options("Read the bearer token from this env variable.", "Read the bearer token from this file.")
@click.option("--no-tail", is_flag=True, help="Receive hooks only; do not read transcripts [setting tail].")
def serve_cmd(
    db_path: Path | None,
    projects: tuple[Path, ...],
    token_env: str | None,
    token_file: Path | None,
    no_tail: bool,
    **given: object,
) -> None:
    """Run the daemon: hook receiver on POST /hooks, transcript tailer, watchdog, read API.

    Binds 127.0.0.1:7391 by default. SIGINT/SIGTERM drain, commit and exit.
    """
    env = dict(os.environ)
    settings = load_settings({**given, "tail": False if no_tail else None}, env)
    start(settings, env, db_path=db_path, projects=projects, token_env=token_env, token_file=token_file)


def register(cli: click.Group) -> None:
    """Add the command to the CLI (``ingestd.cli`` finds this function)."""
    cli.add_command(serve_cmd)


def start(
    settings: settings_mod.Settings,
    env: dict[str, str],
    *,
    db_path: Path | None,
    projects: tuple[Path, ...],
    token_env: str | None,
    token_file: Path | None,
) -> None:
    """Check the token, take the lock and the port, then import and run the daemon (``ingestd.daemon.main``).

    Raises:
        ConfigError: a non-loopback bind without a token, an unreadable token, a ``ship_to`` that
            is not a PostgreSQL URL or holds a password, an unsafe file (``checks.check_files``).
        DaemonError: another daemon holds the database, or the port is taken.
    """
    host = settings.get_str("host")
    token = auth.load_token(env_name=token_env, file=token_file, env=env)
    auth.check_bind(host, token)
    from ingestd.daemon.checks import check_files, check_ship_to
    from ingestd.retention.backup import backup_dir_from

    check_ship_to(settings.get_opt_str("ship_to"))  # refused before the lock and the database, like the bind
    roots = tuple(projects) if projects else tuple(default_projects(env))
    refuse_config_dir_roots(roots)  # ~/.claude for ~/.claude/projects: refused before anything is read
    refuse_overlapping_roots(roots)
    db = resolve_db(db_path)
    # the files before the lock opens (or creates) the database; the daemon does not check them again
    check_files(db, backup_dir_from(settings, db))
    held = lock.acquire(db)
    try:
        sock = bind_socket(host, settings.get_int("port"))
        # Only now the daemon itself (a second or more of imports on a loaded machine).
        from ingestd.daemon.config import ServeConfig
        from ingestd.daemon.main import run

        cfg = ServeConfig.from_settings(settings, db_path=db, projects=roots, token=token)
        run(cfg, held=held, sock=sock, log_level=settings.get_str("log_level"))
    except BaseException:
        # A refused start (the port taken, an unsafe file) leaves no database behind: the file the
        # lock created is removed while still empty (``DaemonLock.discard``); a used one stays.
        held.discard()
        raise
