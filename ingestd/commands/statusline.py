"""``ingestd statusline``, ``ingestd statusline install | uninstall``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import click

from ingestd import statusclient
from ingestd.claude import hooksetup, statuslinesetup
from ingestd.claude.paths import Installed, find_installed
from ingestd.commands._common import IntRange, db_option, setting_option
from ingestd.commands.hooks import HookAddress, _path, _run, address_of
from ingestd.errors import ConfigError

_FIELDS_HELP = (
    "Fields shown, comma-separated, in order: model, session, today, block, limits, context, cache [default: all]."
)


def _url(address: HookAddress) -> str:
    host = f"[{address.host}]" if ":" in address.host else address.host
    return f"http://{host}:{address.port}/statusline"


def client_of(found: Installed) -> str:
    """The path of ``statusclient.py`` in the ingestd ``found`` names: this one's when it is this
    interpreter, else asked of its interpreter (one short subprocess).

    Raises:
        ConfigError: that interpreter has no ingestd with a status-line client.
    """
    if found.python == sys.executable:
        return str(Path(statusclient.__file__).resolve())
    probe = "import importlib.util as u; s = u.find_spec('ingestd.statusclient'); print(s.origin if s else '')"
    try:
        out = subprocess.run([found.python, "-I", "-c", probe], capture_output=True, text=True, timeout=30)
        path = out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        path = ""
    if not path:
        spec = importlib.util.find_spec("ingestd.statusclient")
        raise ConfigError(
            f"{found.python} ({found.source}) has no ingestd.statusclient: upgrade that ingestd, or run this "
            f"with the ingestd whose client is {spec.origin if spec else 'here'}"
        )
    return path


_PROJECT = click.option(
    "--project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Edit DIR/.claude/settings.json instead of the user's settings.json.",
)


def register(cli: click.Group) -> None:
    @cli.group("statusline", invoke_without_command=True)
    @db_option
    @setting_option("host", help="The daemon's address [default: as `hooks install` finds it].")
    @setting_option("port", type=IntRange(1, 65535), help="The daemon's port [default: as `hooks install` finds it].")
    @click.option("--fields", default=None, help=_FIELDS_HELP)
    @click.option("--token-env", default=None, metavar="NAME", help="Env variable holding the daemon's token.")
    @click.pass_context
    def statusline_group(
        ctx: click.Context,
        db_path: Path | None,
        host: str | None,
        port: int | None,
        fields: str | None,
        token_env: str | None,
    ) -> None:
        """Print Claude Code's status line from the JSON on stdin (the daemon draws it and records the
        snapshot: plan limits, Claude Code's cost estimate, context window). Exits 0 whatever happens;
        without the daemon it prints a short fallback. `statusline install` wires the fast client into
        settings.json."""
        if ctx.invoked_subcommand is not None:
            return
        args = ["--url", _url(address_of(host, port, db_path))]
        if fields:
            args += ["--fields", fields]
        if token_env:
            args += ["--token-env", token_env]
        statusclient.main(args)

    @statusline_group.command("install")
    @_PROJECT
    @click.option("--dry-run", is_flag=True, help="Print the diff; write nothing.")
    @click.option("--replace", is_flag=True, help="Replace a status line that is not ingestd's (backed up first).")
    @db_option
    @setting_option("host", help="The daemon's address [default: the running daemon's, else the host setting].")
    @setting_option("port", type=IntRange(1, 65535), help="The daemon's port [default: the running daemon's].")
    @click.option("--fields", default=None, help=_FIELDS_HELP)
    @click.option("--token-env", default=None, metavar="NAME", help="Env variable holding the daemon's token.")
    def install_cmd(
        project: Path | None,
        dry_run: bool,
        replace: bool,
        db_path: Path | None,
        host: str | None,
        port: int | None,
        fields: str | None,
        token_env: str | None,
    ) -> None:
        """Make ingestd Claude Code's status line (settings.json `statusLine`). A status line that is not
        ingestd's is never replaced without --replace, and then the old file is backed up."""
        path = _path(project)
        found = find_installed(dict(os.environ))
        address = address_of(host, port, db_path)
        target = statuslinesetup.StatusTarget(found.python, client_of(found), _url(address), token_env, fields)
        click.echo(f"the status line runs {found.python} -I -S {target.client}: {found.source}", err=True)
        if found.warning:
            click.echo(f"warning: {found.warning}", err=True)
        click.echo(f"it posts to {target.url} ({address.source})", err=True)
        _run(statuslinesetup.plan(path, hooksetup.read_text(path), "install", target, replace=replace), dry_run)

    @statusline_group.command("uninstall")
    @_PROJECT
    @click.option("--dry-run", is_flag=True, help="Print the diff; write nothing.")
    def uninstall_cmd(project: Path | None, dry_run: bool) -> None:
        """Remove ingestd's status line (any other is left alone)."""
        path = _path(project)
        _run(statuslinesetup.plan(path, hooksetup.read_text(path), "uninstall", None), dry_run)
