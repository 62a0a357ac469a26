"""``ingestd plugin path``: the Claude Code plugin directory (``ingestd.claude.pluginsetup``)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ingestd.claude import hooksetup, pluginsetup
from ingestd.claude.paths import claude_config_dir
from ingestd.commands._common import IntRange, db_option, resolve_db, setting_option
from ingestd.commands.hooks import HOST_HELP, PORT_HELP, address_of
from ingestd.errors import ConfigError


def refuse_if_hooks_installed(path: Path) -> None:
    """Refuse (``ConfigError``) when ``hooks install``'s hooks are in the settings file at ``path``:
    with the plugin too, every event would be delivered twice. Reads the file."""
    doc = hooksetup.parse_settings(hooksetup.read_text(path), path)
    if pluginsetup.hooks_installed_in(doc):
        raise ConfigError(
            f"ingestd's hooks are installed in {path}: with the plugin too, every event would be delivered twice; "
            "run `ingestd hooks uninstall` first (or keep those hooks and leave the plugin out)"
        )


def register(cli: click.Group) -> None:
    @cli.group("plugin")
    def plugin_group() -> None:
        """The Claude Code plugin shipped with ingestd (http hooks to the daemon)."""

    @plugin_group.command("path")
    @db_option
    @setting_option("host", help=HOST_HELP)
    @setting_option("port", type=IntRange(1, 65535), help=PORT_HELP)
    @click.option("--token-env", default=None, metavar="NAME", help="Env variable holding the daemon's token.")
    def path_cmd(db_path: Path | None, host: str | None, port: int | None, token_env: str | None) -> None:
        """Print the plugin's directory, one line (a marketplace entry's `command` source runs this).

        The shipped directory when the daemon is on the default address (127.0.0.1:7391, no token);
        else a copy with the daemon's address, written beside the database. Refuses (exit 2) while
        `hooks install`'s hooks are in the user's settings.json: events would arrive twice."""
        refuse_if_hooks_installed(hooksetup.settings_path(None, claude_config_dir(os.environ)))
        address = address_of(host, port, db_path)
        target = hooksetup.HookTarget(port=address.port, token_env=token_env, host=address.host)
        if pluginsetup.is_default(target):
            click.echo(str(pluginsetup.SHIPPED))
            return
        name = f"claude-plugin-{address.host.replace(':', '_')}-{address.port}"
        click.echo(str(pluginsetup.write_dir(target, resolve_db(db_path).parent / name)))
