"""``--projects`` one level too high (``~/.claude``, which holds ``projects/`` and ``history.jsonl``)
is refused with the root meant, by ``ingest``, ``serve`` and ``service install``, before anything
is read or written (``_common.refuse_config_dir_roots``).

Regression: ``ingestd ingest --projects ~/.claude`` filed a phantom session for every
project folder and a ``history`` session into the append-only database, for good.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.cli import cli


def claude_dir(tmp_path: Path, *marks: str) -> Path:
    root = tmp_path / ".claude"
    (root / "projects" / "-home-me-code").mkdir(parents=True)
    if "projects" not in marks:
        (root / "projects" / "-home-me-code").rmdir()
        (root / "projects").rmdir()
    for m in marks:
        if m != "projects":
            (root / m).write_text("{}\n")
    return root


@pytest.mark.parametrize(
    "cmd",
    [["ingest"], ["serve", "--port", "0"], ["service", "install", "--dry-run"]],
)
def test_a_config_dir_is_refused_naming_its_projects_dir(tmp_path: Path, cmd: list[str]) -> None:
    root = claude_dir(tmp_path, "projects", "history.jsonl")
    db = tmp_path / "x.db"
    r = CliRunner().invoke(cli, [*cmd, "--projects", str(root), "--db", str(db)])
    assert r.exit_code == 2, r.output
    assert f"projects root {root} looks like a Claude Code config directory (it holds projects, history.jsonl)" in (
        r.output
    )
    assert f"did you mean --projects {root / 'projects'}?" in r.output
    assert not db.exists()


@pytest.mark.parametrize("mark", ["history.jsonl", "settings.json"])
def test_any_mark_of_a_config_dir_is_enough(tmp_path: Path, mark: str) -> None:
    root = claude_dir(tmp_path, mark)
    r = CliRunner().invoke(cli, ["ingest", "--projects", str(root), "--db", str(tmp_path / "x.db")])
    assert r.exit_code == 2, r.output
    assert f"(it holds {mark})" in r.output and "pass its projects directory." in r.output


def test_the_projects_dir_itself_is_ingested(tmp_path: Path) -> None:
    root = claude_dir(tmp_path, "projects", "history.jsonl", "settings.json")
    r = CliRunner().invoke(cli, ["ingest", "--projects", str(root / "projects"), "--db", str(tmp_path / "x.db")])
    assert r.exit_code == 0, r.output
