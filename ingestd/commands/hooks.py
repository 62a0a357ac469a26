"""``ingestd hooks install | uninstall | print``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ingestd import hooksetup
from ingestd import settings as settings_mod
from ingestd.claudedir import claude_config_dir
from ingestd.commands._common import IntRange, setting_option
from ingestd.daemon.bind import DEFAULT_PORT, reach_host
from ingestd.errors import ConfigError
from ingestd.http.auth import LOOPBACK_HOSTS
from ingestd.installpath import Installed, find_installed

F = TypeVar("F", bound=Callable[..., Any])


def _address(given_host: str | None, given_port: int | None) -> tuple[str, int]:
    """Where ``serve`` listens, as it resolves it: the ``host`` and ``port`` settings (flag,
    ``INGESTD_*``, the config file, the default), as a client on this machine reaches it
    (``bind.reach_host``): a wildcard bind on loopback, any other address as it is (a daemon bound
    to ``10.1.2.3`` alone does not listen on 127.0.0.1).

    Raises:
        ConfigError: a bad setting, or port 0 (``serve`` then picks any free port: no fixed URL).
    """
    settings = settings_mod.load({"host": given_host, "port": given_port}, dict(os.environ))
    port = settings.get_int("port")
    if port == 0:
        raise ConfigError("the port setting is 0 (serve picks any free port): pass the daemon's port with --port")
    return reach_host(settings.get_str("host")), port


def _warn_tokenless(address: tuple[str, int], token_env: str | None) -> None:
    """Warn (stderr) when the hooks go beyond loopback without a token: ``serve`` binds such an
    address only with one, and answers every hook without it 401."""
    if token_env is None and address[0] not in LOOPBACK_HOSTS:
        click.echo(
            f"warning: a daemon on {address[0]} requires a token; without --token-env NAME every hook is refused (401)",
            err=True,
        )


_PORT_HELP = "The daemon's port [default: the port setting, as serve reads it: INGESTD_PORT, the config file, 7391]."
_HOST_HELP = (
    "The address serve listens on (its --host) [default: the host setting, as serve reads it: INGESTD_HOST, "
    "the config file, 127.0.0.1; a wildcard bind is reached on loopback]."
)


def _target(address: tuple[str, int], token_env: str | None, legacy: bool, found: Installed) -> hooksetup.HookTarget:
    """The hooks' target; command hooks run the interpreter of the stable ``ingestd`` (``found``,
    ``installpath.find_installed``), so ``make clean`` or moving the clone does not break them."""
    host, port = address
    return hooksetup.HookTarget(port=port, token_env=token_env, legacy=legacy, python=found.python, host=host)


def _say_which(legacy: bool, found: Installed) -> None:
    """Which ingestd the command hooks run (``found``), and why that may break (on stderr)."""
    events = "every event" if legacy else "SessionStart and Setup"
    click.echo(f"command hooks ({events}) run {found.python} -m ingestd.forward: {found.source}", err=True)
    if found.warning:
        click.echo(f"warning: {found.warning}", err=True)


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
    @setting_option("host", help=_HOST_HELP)
    @setting_option("port", type=IntRange(1, 65535), help=_PORT_HELP)
    @click.option("--token-env", default=None, metavar="NAME", help="Env variable holding the daemon's token.")
    @click.option("--legacy", is_flag=True, help="Claude Code < 2.1.63: command forwarders for every event.")
    def install_cmd(
        project: Path | None, dry_run: bool, host: str | None, port: int | None, token_env: str | None, legacy: bool
    ) -> None:
        """Add ingestd's hooks (keeps your own; backs up the old file; idempotent)."""
        path = _path(project)
        found = find_installed(dict(os.environ))
        address = _address(host, port)
        p = hooksetup.plan(path, hooksetup.read_text(path), "install", _target(address, token_env, legacy, found))
        _say_which(legacy, found)
        _warn_tokenless(address, token_env)
        _run(p, dry_run)

    @hooks_group.command("uninstall")
    @_common
    def uninstall_cmd(project: Path | None, dry_run: bool) -> None:
        """Remove ingestd's hooks only."""
        path = _path(project)
        # the target is not read by an uninstall (``hooksetup.is_ours`` decides): no PATH search for it
        _run(
            hooksetup.plan(path, hooksetup.read_text(path), "uninstall", hooksetup.HookTarget(port=DEFAULT_PORT)),
            dry_run,
        )

    @hooks_group.command("print")
    @setting_option("host", help=_HOST_HELP)
    @setting_option("port", type=IntRange(1, 65535), help=_PORT_HELP)
    @click.option("--token-env", default=None, metavar="NAME")
    @click.option("--legacy", is_flag=True)
    def print_cmd(host: str | None, port: int | None, token_env: str | None, legacy: bool) -> None:
        """Print the hooks block ingestd installs (touches no file)."""
        address = _address(host, port)
        _warn_tokenless(address, token_env)
        target = _target(address, token_env, legacy, find_installed(dict(os.environ)))
        click.echo(hooksetup.render({"hooks": hooksetup.our_hooks(target)}), nl=False)


def _run(p: hooksetup.Plan, dry_run: bool) -> None:
    if not p.changed:
        click.echo(f"{p.path}: already up to date, nothing to do")
        return
    if dry_run:
        click.echo(p.diff(), nl=False)
        return
    backup = hooksetup.apply_plan(p, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    click.echo(f"{p.path}: updated" + (f" (old file saved as {backup})" if backup else ""))
