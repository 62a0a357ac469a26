"""The command line: parses options, calls library functions, maps errors to exit codes.

Every module in ``ingestd.commands`` whose name does not start with ``_`` defines the
command of the same name through ``register(cli)``. Modules are imported only when
their command runs (or ``--help`` lists them), so ``ingestd cost`` does not pay for
importing the HTTP stack. ``IngestdError`` becomes a one-line message on stderr and
its ``exit_code`` (1 a check failed; 2 every other error: usage, configuration, input, storage).
"""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
import sys
from typing import Any

import click

from ingestd import __version__, commands, logs
from ingestd.errors import IngestdError


class _Group(click.Group):
    """The root group: lazily loaded commands, ``IngestdError`` → message and exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = {m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")}
        return sorted(names | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            if cmd_name.startswith("_") or cmd_name not in self.list_commands(ctx):
                return None
            module = importlib.import_module(f"{commands.__name__}.{cmd_name}")
            module.register(self)
            if cmd_name in self.commands:
                _check_settings_first(self.commands[cmd_name], cmd_name)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except IngestdError as e:
            click.echo(f"ingestd: {e.message}", err=True)
            sys.exit(e.exit_code)
        except BrokenPipeError:
            # stdout closed early (`ingestd sessions | head`): not an error of ours.
            sys.stderr.close()
            sys.exit(0)
        except OSError as e:
            # The environment refused (a path that does not exist, permissions, a full disk):
            # say which file and why, as a configuration error, never a traceback.
            where = f" ({e.filename})" if e.filename else ""
            click.echo(f"ingestd: {e.strerror or e}{where}", err=True)
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ingestd")
def cli() -> None:
    """ingestd: what your Claude Code agents did, exactly.

    Hooks and transcripts go into an append-only log; sessions, agents, edges,
    tokens and cost are projected from it.
    """
    # before any command runs: structlog's default prints to stdout, which is the answer's
    logs.configure()


def _check_settings_first(cmd: click.Command, name: str) -> None:
    """Make every leaf command under ``cmd`` check the settings (``_check_settings``) before it
    runs: after its options are parsed, so ``--help`` still works with a broken config file."""
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            _check_settings_first(sub, name)
        return
    run = cmd.callback
    if run is None:
        return

    params = list(cmd.params)

    @functools.wraps(run)
    def checked(*args: Any, **kwargs: Any) -> Any:
        _refuse_undecodable(params, kwargs)
        _check_settings(name)
        return run(*args, **kwargs)

    cmd.callback = checked


def _refuse_undecodable(params: list[click.Parameter], values: dict[str, Any]) -> None:
    """Refuse a text argument holding bytes that are not UTF-8 (``click.BadParameter``, exit 2).

    Python reads such argv bytes as lone surrogates, which no query, SQL parameter or JSON answer
    can carry. Paths are ``Path`` objects, not text, and pass: a file name may be any bytes."""
    for param in params:
        value = values.get(param.name or "")
        for text in value if isinstance(value, tuple | list) else (value,):
            if not isinstance(text, str):
                continue
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise click.BadParameter(
                    f"'{_shown(text)}' holds bytes that are not UTF-8: give the text in UTF-8", param=param
                ) from None


def _shown(text: str) -> str:
    """``text`` with the bytes argv could not decode shown as ``\\xff`` escapes."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def _check_settings(command: str | None) -> None:
    """Load the settings once for every command, as ``serve`` does: a missing ``INGESTD_CONFIG``
    file, an unknown key or a bad value is refused (``ConfigError``) whether or not the command
    uses a setting. ``status`` only warns on stderr: it is what one runs when something is wrong.
    The file as read is kept in the command's context (``settings.CONFIG_META``), so the command resolves its
    own settings from this reading (``commands._common.load_settings``) instead of reading it again.
    Reads the environment and the config file."""
    from ingestd import settings

    env = dict(os.environ)
    try:
        config = settings.read_config(env)
        settings.resolve({}, env, config)
    except IngestdError as e:
        if command != "status":
            raise
        click.echo(f"ingestd: warning: {e.message}", err=True)
        return
    click.get_current_context().meta[settings.CONFIG_META] = config


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="ingestd")
