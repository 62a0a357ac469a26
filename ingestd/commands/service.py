"""``ingestd service install | uninstall | status``: run the daemon as a user service."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click

from ingestd.claude import service
from ingestd.claude.paths import find_installed
from ingestd.commands._common import (
    IntRange,
    db_option,
    default_projects,
    load_settings,
    projects_option,
    refuse_config_dir_roots,
    refuse_overlapping_roots,
    resolve_db,
)
from ingestd.errors import ConfigError
from ingestd.http import auth


def _platform(platform: str | None) -> str:
    return platform or service.current_platform()


platform_opt = click.option(
    "--platform",
    type=click.Choice(["linux", "darwin"]),
    default=None,
    help="Write the file for this platform (default: this machine's).",
)


@click.group("service")
def service_group() -> None:
    """Keep `ingestd serve` running: a systemd user unit (Linux) or a launchd agent (macOS)."""


@service_group.command("install")
@db_option
@projects_option
@click.option("--port", type=IntRange(1, 65535), default=None, help="The daemon's port [default: 7391].")
@click.option("--dry-run", is_flag=True, help="Print the service file and where it would go; change nothing.")
@click.option("--no-start", is_flag=True, help="Write the file only; do not load or start the service.")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The daemon reads its bearer token from this file (`serve --token-file`; needed to bind "
    "anything but 127.0.0.1). The service file names the file, never the token.",
)
@platform_opt
def install_cmd(
    db_path: Path | None,
    projects: tuple[Path, ...],
    port: int | None,
    dry_run: bool,
    no_start: bool,
    token_file: Path | None,
    platform: str | None,
) -> None:
    """Install and start the service: `ingestd serve` from a stable path, at login, restarted on failure."""
    env = dict(os.environ)
    plat = _platform(platform)
    path = service.service_file(plat, env)
    db = resolve_db(db_path)
    roots = projects or tuple(default_projects(env))
    refuse_config_dir_roots(roots)  # a service tailing ~/.claude would file phantom sessions for good
    refuse_overlapping_roots(roots)
    found = find_installed(env)
    spec = service.ServiceSpec(
        argv=service.serve_argv(found.argv, db, roots, port, token_file),
        log_file=db.parent / "ingestd.log",
        platform=plat,
        env=service.service_env(env),
    )
    service.render(spec)  # a value the file cannot hold is refused first, by name
    _check_token(env, token_file)
    if found.warning:
        click.echo(f"warning: {found.warning}", err=True)
    if dry_run:
        click.echo(f"# {path} (runs {found.source})")
        click.echo(service.render(spec), nl=False)
        return
    click.echo(f"runs {found.source}")
    for line in service.install(spec, path, start=not no_start and platform in (None, service.current_platform())):
        click.echo(line)
    click.echo(f"{path}: written")
    logs = "journalctl --user -u ingestd -f" if plat != "darwin" else f"tail -f {spec.log_file}"
    click.echo(f"logs: `{logs}`; health: `ingestd status`")


def _check_token(env: dict[str, str], token_file: Path | None) -> None:
    """Refuse what ``serve`` would refuse at every start: a token file it cannot use, or a bind
    beyond loopback (``host`` as the service resolves it) without one.

    Raises:
        ConfigError: either, with the option that fixes it.
    """
    token = auth.load_token(env_name=None, file=token_file, env=env)
    host = load_settings({}, env).get_str("host")
    try:
        auth.check_bind(host, token)
    except ConfigError:
        raise ConfigError(
            f"refusing to install a service that cannot start: it would bind {host} (setting host), which "
            "needs a token: give --token-file PATH (a file only you can read; the service file names it, "
            "never the token), or bind 127.0.0.1"
        ) from None


@service_group.command("uninstall")
@click.option("--no-stop", is_flag=True, help="Remove the file only; do not stop or unload the service.")
@platform_opt
def uninstall_cmd(no_stop: bool, platform: str | None) -> None:
    """Stop the service and remove its file."""
    plat = _platform(platform)
    path = service.service_file(plat, dict(os.environ))
    stop = not no_stop and platform in (None, service.current_platform())
    for line in service.uninstall(plat, path, stop=stop):
        click.echo(line)


@service_group.command("status")
@db_option
@platform_opt
def status_cmd(db_path: Path | None, platform: str | None) -> None:
    """Whether the service is installed, what the service manager says, and whether the daemon answers."""
    from ingestd.daemon import presence

    plat = _platform(platform)
    path = service.service_file(plat, dict(os.environ))
    click.echo(f"service file: {path}" + ("" if path.exists() else " (not installed)"))
    if path.exists() and platform in (None, service.current_platform()):
        code, out = service.manager_status(plat, path)
        why = service.no_user_manager(out or "") if code != 0 else None
        click.echo(f"service manager: {why}" if why else out or f"(service manager exit {code})")
    p = presence.detect(resolve_db(db_path), datetime.now(UTC))
    where = f" pid {p.pid} on {p.address}" if p.running else ""
    click.echo(f"daemon: {p.state.replace('_', ' ')}{where}" + (f" ({p.problem})" if p.problem else ""))


def register(cli: click.Group) -> None:
    """Add the command to the CLI (``ingestd.cli`` finds this function)."""
    cli.add_command(service_group)
