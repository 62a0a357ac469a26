"""Two ``--projects`` roots of which one is the other or lies inside it are refused by ``ingest``,
``serve`` and ``service install``, before anything is read or written
(``_common.refuse_overlapping_roots``): a transcript's origin is its path relative to its root, so a
file under both would be logged twice, under two names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from tests.conftest import CORPUS

CMDS = [["ingest"], ["serve", "--port", "0"], ["service", "install", "--dry-run"]]


def projects(tmp_path: Path) -> Path:
    """A projects root with one real transcript (the corpus's, else the bundled fixtures' first)."""
    root = tmp_path / "projects"
    src = next(iter(sorted((CORPUS / "claude-projects").glob("*/*.jsonl"))), None) if CORPUS.is_dir() else None
    if src is None:
        src = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "projects").glob("*/*.jsonl"))[0]
    (root / src.parent.name).mkdir(parents=True)
    shutil.copy(src, root / src.parent.name / src.name)
    return root


@pytest.mark.parametrize("cmd", CMDS)
def test_a_root_inside_another_is_refused_naming_the_one_to_keep(tmp_path: Path, cmd: list[str]) -> None:
    root = projects(tmp_path)
    inner = next(root.iterdir())
    db = tmp_path / "x.db"
    for roots in ([root, inner], [inner, root]):
        argv = [*cmd, "--db", str(db), *(a for r in roots for a in ("--projects", str(r)))]
        r = CliRunner().invoke(cli, argv)
        assert r.exit_code == 2, r.output
        assert f"projects root {inner} is inside projects root {root}" in r.output
        assert f"Pass only --projects {root}." in r.output
    assert not db.exists()


@pytest.mark.parametrize("cmd", CMDS)
def test_one_directory_under_two_spellings_is_refused(tmp_path: Path, cmd: list[str]) -> None:
    root = projects(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(root)
    db = tmp_path / "x.db"
    r = CliRunner().invoke(cli, [*cmd, "--db", str(db), "--projects", str(root), "--projects", str(link)])
    assert r.exit_code == 2, r.output
    assert f"projects roots {root} and {link} are the same directory" in r.output
    assert not db.exists()


def test_side_by_side_roots_are_both_ingested(tmp_path: Path) -> None:
    a, b = projects(tmp_path / "a"), projects(tmp_path / "b")
    r = CliRunner().invoke(cli, ["ingest", "--db", str(tmp_path / "x.db"), "--projects", str(a), "--projects", str(b)])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("files 2 (2 read")
