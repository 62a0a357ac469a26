"""The command line: parses options, calls library functions, maps errors to exit codes.

Every module in ``ingestd.commands`` exposes ``register(cli)``; they are found
automatically, so adding a command never edits this file. ``IngestdError`` becomes
a one-line message on stderr and its ``exit_code`` (2 usage/configuration, 1 a
check failed).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click

from ingestd import __version__, commands
from ingestd.errors import IngestdError


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except IngestdError as e:
            click.echo(f"ingestd: {e.message}", err=True)
            sys.exit(e.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ingestd")
def cli() -> None:
    """ingestd: what your Claude Code agents did, exactly.

    Hooks and transcripts go into an append-only log; sessions, agents, edges,
    tokens and cost are projected from it.
    """


def _load_commands() -> None:
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(cli)


_load_commands()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="ingestd")
