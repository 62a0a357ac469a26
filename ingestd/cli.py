"""The command line: parses options, calls library functions, maps errors to exit codes.

Every module in ``ingestd.commands`` whose name does not start with ``_`` defines the
command of the same name through ``register(cli)``. Modules are imported only when
their command runs (or ``--help`` lists them), so ``ingestd cost`` does not pay for
importing the HTTP stack. ``IngestdError`` becomes a one-line message on stderr and
its ``exit_code`` (2 usage/configuration, 1 a check failed).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

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


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="ingestd")
