"""Where things are: Claude Code's config directory, and the ``ingestd`` that long-lived commands run.

``claude_config_dir``: where Claude Code keeps its configuration directory (``~/.claude``), as
Claude Code finds it.

``find_installed``: which ``ingestd`` a service unit or a hook command should run, one that survives
the clone. A command written into a systemd unit, a launchd agent or Claude Code's ``settings.json``
outlives the shell that wrote it. Pointing it into a clone's ``.venv`` breaks it silently on ``make
clean`` or when the clone moves, so the rule is: the ``ingestd`` on ``PATH`` (``pipx
install .`` and ``uv tool install .`` put a stable one there), else this interpreter, with a warning
saying why that is fragile and how to fix it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Installed:
    """The ingestd to write into long-lived commands.

    Attributes:
        argv: list[str], the command that runs ``ingestd`` (``[path]`` or ``[python, "-m", "ingestd"]``).
        python: str, the interpreter of that installation (runs ``-m ingestd.forward``).
        source: str, in words, which one was chosen and why.
        warning: str | None, why the choice may break later, and what to do.
    """

    argv: list[str]
    python: str
    source: str
    warning: str | None


def _shebang_python(script: Path) -> str | None:
    """The interpreter named by a console script's ``#!`` line, when it is one existing absolute path."""
    try:
        with script.open("rb") as fh:
            first = fh.readline(4096).decode(errors="replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    target = first[2:].strip()
    if " " in target or not os.path.isabs(target) or not os.path.isfile(target):
        return None
    return target


def _inside_repo(path: str) -> bool:
    """Whether ``path`` lies in a source checkout (an editable install's clone: ``make clean`` removes it)."""
    if not (REPO / "pyproject.toml").is_file():
        return False
    # Both spellings: a venv's python is a symlink out of the clone, a PATH entry may link into it.
    return any(Path(p).is_relative_to(REPO) for p in (os.path.abspath(path), os.path.realpath(path)))


def find_installed(env: dict[str, str]) -> Installed:
    """The ``ingestd`` on ``env["PATH"]`` when there is one outside a clone, else this interpreter.

    Args:
        env: the environment (``PATH`` is searched).

    Returns:
        ``Installed``; ``warning`` is set when the choice lives in a clone or is not on PATH.
    """
    fix = "install it with `pipx install .` or `uv tool install .` and run this again"
    found = shutil.which("ingestd", path=env.get("PATH", ""))
    if found is not None:
        found = os.path.abspath(found)
        python = _shebang_python(Path(os.path.realpath(found))) or sys.executable
        if not _inside_repo(found):
            return Installed([found], python, f"the ingestd on PATH ({found})", None)
        return Installed(
            [found],
            python,
            f"the ingestd on PATH ({found})",
            f"{found} is inside the clone {REPO}: `make clean` or moving the clone breaks it; {fix}",
        )
    where = "inside the clone " + str(REPO) if _inside_repo(sys.executable) else "not on PATH"
    return Installed(
        [sys.executable, "-m", "ingestd"],
        sys.executable,
        f"this interpreter ({sys.executable}; no ingestd on PATH)",
        f"{sys.executable} is {where}: if it goes, this breaks; {fix}",
    )


def claude_config_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's config directory: ``$CLAUDE_CONFIG_DIR`` when set and not empty (it moves the
    whole of ``~/.claude``: ``projects/`` and ``settings.json`` alike), else ``$HOME/.claude`` (the
    user's home directory when ``HOME`` is unset or empty). Reads only ``env`` (and, without
    ``HOME``, the password database); touches no file.

    Args:
        env: the environment (``os.environ`` or a test's mapping).
    """
    base = env.get("CLAUDE_CONFIG_DIR")
    if base:
        return Path(base)
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".claude"
