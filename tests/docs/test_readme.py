"""The README is the way in: every command is in its table, every command line it shows parses with
the real CLI, and every document it points to exists (the reference, design notes, benchmarks)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from ingestd.cli import cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _shown_command_lines(text: str) -> list[str]:
    """Each ``ingestd ...`` line of a ``sh`` block, its comment dropped."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("ingestd "):
                out.append(line)
    return out


def _resolve(args: list[str]) -> click.Command:
    """The command ``args`` name, its options parsed as ``ingestd`` parses them (click's UsageError if not)."""
    command: click.Command = cli
    names, rest = ["ingestd"], list(args)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(click.Context(command), rest[0])
        assert sub is not None, f"no command {rest[0]!r} in: ingestd {' '.join(args)}"
        names.append(rest[0])
        command, rest = sub, rest[1:]
    try:
        command.make_context(" ".join(names), rest)
    except click.exceptions.Exit as e:  # --version, --help: parsed, and they answer at once
        assert e.exit_code == 0
    return command


def test_every_command_is_in_the_readme_table() -> None:
    ctx = click.Context(cli)
    table = README[README.index("## Commands") :].split("\n## ", 1)[0]
    assert [n for n in cli.list_commands(ctx) if f"`ingestd {n}" not in table] == []


@pytest.mark.parametrize("line", _shown_command_lines(README))
def test_every_command_line_the_readme_shows_parses(line: str) -> None:
    args = shlex.split(line)[1:]
    _resolve(args)


def test_the_readme_shows_the_first_steps() -> None:
    lines = _shown_command_lines(README)
    assert {"ingestd service install", "ingestd hooks install", "ingestd status"} <= set(lines)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_relative_link_resolves(doc: Path) -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", doc.read_text())
    local = [x for x in links if not re.match(r"[a-z]+:", x)]
    assert [x for x in local if not (doc.parent / x).exists()] == []
