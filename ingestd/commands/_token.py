"""The ``--token-env`` / ``--token-file`` options of the commands that speak to the daemon with its
bearer token (``serve`` takes it, ``status`` sends it with its health probe): one spelling for both."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click


def token_options(env_help: str, file_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a click command with ``--token-env NAME`` (``token_env``) and ``--token-file PATH``
    (``token_file``: a ``Path``, not a directory), both default None."""

    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), default=None, help=file_help)(
            f
        )
        return click.option("--token-env", default=None, metavar="NAME", help=env_help)(f)

    return deco
