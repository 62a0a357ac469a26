"""``ingestd hooks install | uninstall | print``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from ingestd import settings as settings_mod
from ingestd.claude import hooksetup, pluginsetup
from ingestd.claude.paths import Installed, claude_config_dir, find_installed
from ingestd.commands._common import IntRange, db_option, load_settings, resolve_db, setting_option
from ingestd.daemon import presence
from ingestd.daemon.bind import DEFAULT_PORT, reach_host
from ingestd.errors import ConfigError
from ingestd.settings import LOOPBACK_HOSTS

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class HookAddress:
    """Where the hooks post, and why there.

    Attributes:
        host: str, the address a client on this machine sends to (``bind.reach_host`` applied).
        port: int, the daemon's TCP port (1 to 65535).
        source: str, in words, where ``host`` and ``port`` came from (for the user).
    """

    host: str
    port: int
    source: str


def _running_daemon(db_path: Path) -> presence.Presence | None:
    """The daemon serving ``db_path`` now (its pid is alive, ``presence.detect``), or None. Read-only.

    Its health does not matter (a stalled daemon keeps the address it bound), so it is not probed:
    a stuck daemon made every `hooks install` wait for the probe's timeout.
    """
    found = presence.detect(db_path, datetime.now(UTC), probe=False)
    alive = found.state in ("running", "unhealthy", "not_responding")
    return found if alive and found.address is not None else None


def _setting_source(settings: settings_mod.Settings, name: str) -> str:
    return {"env": settings_mod.env_name(name), "config": "the config file", "default": "the default"}.get(
        settings.sources[name], "--" + name
    )


def resolve_address(
    given_host: str | None, given_port: int | None, daemon: presence.Presence | None, settings: settings_mod.Settings
) -> HookAddress:
    """Where the hooks post: for the host and the port each, the ``--host`` / ``--port`` option, else
    the running daemon's bound address (``daemon``: it may have been given ``serve --host/--port``,
    which no setting records), else the ``host`` / ``port`` settings (``INGESTD_*``, the config file,
    the default). A wildcard bind is reached on loopback, any other address as it is
    (``bind.reach_host``: a daemon bound to ``10.1.2.3`` alone does not listen on 127.0.0.1). Pure.

    Args:
        daemon: the running daemon (``_running_daemon``), or None.
        settings: resolved with the options as arguments.

    Raises:
        ConfigError: a bad setting, or a port 0 from the settings (``serve`` then picks any free
            port: no fixed URL) with no daemon running to say which.
    """
    bound = None if daemon is None or daemon.address is None else daemon.address.rsplit(":", 1)
    running = f"the daemon running on this database (pid {daemon.pid})" if daemon is not None else ""
    if given_host is not None:
        host, host_from = given_host, "--host"
    elif bound is not None:
        host, host_from = bound[0], running
    else:
        host, host_from = settings.get_str("host"), _setting_source(settings, "host")
    if given_port is not None:
        port, port_from = given_port, "--port"
    elif bound is not None:
        port, port_from = int(bound[1]), running
    else:
        port, port_from = settings.get_int("port"), _setting_source(settings, "port")
        if port == 0:
            raise ConfigError(
                "the port setting is 0 (serve picks any free port) and no daemon runs on this database: "
                "start it, or pass its port with --port (or its database with --db)"
            )
    if (host_from, port_from) == ("--host", "--port"):
        host_from = port_from = "the --host and --port options"
    source = host_from if host_from == port_from else f"host from {host_from}, port from {port_from}"
    return HookAddress(reach_host(host), port, source)


def address_of(given_host: str | None, given_port: int | None, db_path: Path | None) -> HookAddress:
    """``resolve_address`` with the settings loaded and, unless both options are given, the daemon
    serving ``db_path`` (default: the default database) looked for. Reads the config file, the
    daemon's state file and probes its health (about a second at most).

    Raises:
        ConfigError: as ``resolve_address``.
    """
    settings = load_settings({"host": given_host, "port": given_port})
    both = given_host is not None and given_port is not None
    daemon = None if both else _running_daemon(resolve_db(db_path))
    return resolve_address(given_host, given_port, daemon, settings)


def _say_where(address: HookAddress) -> None:
    """Which address the hooks post to, and why (on stderr)."""
    shown = f"[{address.host}]" if ":" in address.host else address.host
    click.echo(f"hooks post to http://{shown}:{address.port}/hooks ({address.source})", err=True)


def _warn_tokenless(address: HookAddress, token_env: str | None) -> None:
    """Warn (stderr) when the hooks go beyond loopback without a token: ``serve`` binds such an
    address only with one, and answers every hook without it 401."""
    if token_env is None and address.host not in LOOPBACK_HOSTS:
        click.echo(
            f"warning: a daemon on {address.host} requires a token; "
            "without --token-env NAME every hook is refused (401)",
            err=True,
        )


PORT_HELP = (
    "The daemon's port [default: the running daemon's (of --db), else the port setting as serve reads it: "
    "INGESTD_PORT, the config file, 7391]."
)
HOST_HELP = (
    "The address serve listens on (its --host) [default: the running daemon's (of --db), else the host setting "
    "as serve reads it: INGESTD_HOST, the config file, 127.0.0.1; a wildcard bind is reached on loopback]."
)


def _target(
    address: HookAddress, token_env: str | None, legacy: bool, found: Installed, otel: bool = False
) -> hooksetup.HookTarget:
    """The hooks' target; command hooks run the interpreter of the stable ``ingestd`` (``found``,
    ``paths.find_installed``), so ``make clean`` or moving the clone does not break them."""
    return hooksetup.HookTarget(
        port=address.port, token_env=token_env, legacy=legacy, python=found.python, host=address.host, otel=otel
    )


def _say_which(legacy: bool, found: Installed) -> None:
    """Which ingestd the command hooks run (``found``), and why that may break (on stderr)."""
    events = "every event" if legacy else "SessionStart and Setup"
    click.echo(f"command hooks ({events}) run {found.python} -m ingestd.forward: {found.source}", err=True)
    if found.warning:
        click.echo(f"warning: {found.warning}", err=True)


def _say_events() -> None:
    """Which events are installed, with which handler, and why each is or is not (on stderr)."""
    click.echo("\n".join(hooksetup.event_table_lines()), err=True)


def _refuse_if_plugin_enabled(path: Path) -> None:
    """Refuse (``ConfigError``) while the ingestd plugin is enabled in the user's settings or in the
    file being edited: its hooks already post every event, and both would deliver each twice.
    Reads those files."""
    for where in dict.fromkeys([_path(None), path]):
        ids = pluginsetup.enabled_in(hooksetup.parse_settings(hooksetup.read_text(where), where))
        if ids:
            raise ConfigError(
                f"the ingestd plugin is enabled in {where} (enabledPlugins: {', '.join(ids)}): its hooks already "
                "send every event to the daemon, and installing these too would deliver each twice; keep the "
                f"plugin, or run `claude plugin disable {ids[0]}` first; nothing was changed"
            )


def _path(project: Path | None) -> Path:
    return hooksetup.settings_path(project, claude_config_dir(os.environ))


def _common(f: F) -> F:
    for opt in reversed(
        [
            click.option(
                "--project",
                type=click.Path(exists=True, file_okay=False, path_type=Path),
                default=None,
                help="Edit DIR/.claude/settings.json instead of the user's settings.json"
                " ($CLAUDE_CONFIG_DIR/settings.json or ~/.claude/settings.json; DIR must exist).",
            ),
            click.option("--dry-run", is_flag=True, help="Print the diff; write nothing."),
            click.option("--force", is_flag=True, help="Write the settings file even when it is read-only."),
        ]
    ):
        f = opt(f)
    return f


def register(cli: click.Group) -> None:
    @cli.group("hooks")
    def hooks_group() -> None:
        """Wire Claude Code's hooks to the daemon (settings.json, non-destructive)."""

    @hooks_group.command("install")
    @_common
    @db_option
    @setting_option("host", help=HOST_HELP)
    @setting_option("port", type=IntRange(1, 65535), help=PORT_HELP)
    @click.option("--token-env", default=None, metavar="NAME", help="Env variable holding the daemon's token.")
    @click.option("--legacy", is_flag=True, help="Claude Code < 2.1.63: command forwarders for every event.")
    @click.option(
        "--otel",
        is_flag=True,
        help="Also send Claude Code's own OpenTelemetry (logs and metrics) to the daemon: the env entries"
        " CLAUDE_CODE_ENABLE_TELEMETRY and OTEL_* in the same settings file (uninstall removes only ours).",
    )
    def install_cmd(
        project: Path | None,
        dry_run: bool,
        force: bool,
        db_path: Path | None,
        host: str | None,
        port: int | None,
        token_env: str | None,
        legacy: bool,
        otel: bool,
    ) -> None:
        """Add ingestd's hooks (keeps your own; backs up the old file; idempotent). They post to the
        daemon running on --db when there is one, else to where the settings say serve listens.
        Every observational event is hooked; --dry-run also lists each event and why."""
        path = _path(project)
        _refuse_if_plugin_enabled(path)
        found = find_installed(dict(os.environ))
        address = address_of(host, port, db_path)
        target = _target(address, token_env, legacy, found, otel)
        p = hooksetup.plan(path, hooksetup.read_text(path), "install", target)
        _say_which(legacy, found)
        _say_where(address)
        _warn_tokenless(address, token_env)
        if otel:
            click.echo(f"telemetry exports to {target.base_url}/v1/logs and /v1/metrics (OTLP, protobuf)", err=True)
            if token_env:
                click.echo(
                    f"note: the exporter sends no token from settings.json; set OTEL_EXPORTER_OTLP_HEADERS="
                    f"'Authorization=Bearer <the token in ${token_env}>' where Claude Code runs, or exports get 401",
                    err=True,
                )
        if dry_run:
            _say_events()
        _run(p, dry_run, force)

    @hooks_group.command("uninstall")
    @_common
    def uninstall_cmd(project: Path | None, dry_run: bool, force: bool) -> None:
        """Remove ingestd's hooks only."""
        path = _path(project)
        # the target is not read by an uninstall (``hooksetup.is_ours`` decides): no PATH search for it
        _run(
            hooksetup.plan(path, hooksetup.read_text(path), "uninstall", hooksetup.HookTarget(port=DEFAULT_PORT)),
            dry_run,
            force,
        )

    @hooks_group.command("print")
    @db_option
    @setting_option("host", help=HOST_HELP)
    @setting_option("port", type=IntRange(1, 65535), help=PORT_HELP)
    @click.option("--token-env", default=None, metavar="NAME")
    @click.option("--legacy", is_flag=True)
    def print_cmd(
        db_path: Path | None, host: str | None, port: int | None, token_env: str | None, legacy: bool
    ) -> None:
        """Print the hooks block ingestd installs (touches no file), to the address install would use;
        on stderr, every event Claude Code has and why it is installed or left out."""
        address = address_of(host, port, db_path)
        _say_where(address)
        _warn_tokenless(address, token_env)
        _say_events()
        target = _target(address, token_env, legacy, find_installed(dict(os.environ)))
        click.echo(hooksetup.render({"hooks": hooksetup.our_hooks(target)}), nl=False)


def _run(p: hooksetup.Plan, dry_run: bool, force: bool = False) -> None:
    if not p.changed:
        click.echo(f"{p.path}: already up to date, nothing to do")
        return
    if dry_run:
        click.echo(p.diff(), nl=False)
        return
    backup = hooksetup.apply_plan(p, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), force=force)
    click.echo(f"{p.path}: updated" + (f" (old file saved as {backup})" if backup else ""))
