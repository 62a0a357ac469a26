"""``make demo`` works in a clone without ``../shared`` (fixtures) and with it (the real corpus)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "corpus" / "claude-projects"


def _make_demo(clone: Path) -> subprocess.CompletedProcess[str]:
    venv = Path(sys.executable).parent.parent
    # The clone's own `ingestd` package is imported (the recipe runs in the clone: sys.path[0]); the
    # venv's install stamp is taken as up to date (-o) so make does not reinstall anything.
    return subprocess.run(
        ["make", "-C", str(clone), "demo", f"VENV={venv}", "-o", f"{venv}/.installed"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "COLUMNS": "100"},
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_in_a_clone_without_shared_uses_the_fixtures(tmp_path: Path) -> None:
    clone = tmp_path / "clone"  # no ../shared beside it
    clone.mkdir()
    for name in ("ingestd", "fixtures"):
        shutil.copytree(REPO / name, clone / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, clone / name)
    assert not (tmp_path / "shared").exists()
    res = _make_demo(clone)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"== ingest {clone}/fixtures/projects" in res.stdout
    for section in ("== sessions", "== tree", "== cost"):
        assert section in res.stdout
    assert "no corpus" not in res.stderr


@pytest.mark.corpus
@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/corpus (absent in a standalone clone)")
def test_make_demo_beside_shared_uses_the_real_corpus() -> None:
    from ingestd import demo

    none = {"HOME": "/nonexistent"}  # no projects of one's own: the corpus beside the clone
    assert demo._corpus([], none) == SHARED.resolve() or demo._corpus([], none).resolve() == SHARED.resolve()
    assert demo._corpus([""], none) == demo._corpus([], none)


def test_readme_says_which_tree_make_demo_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's word on ``make demo``'s input is ``demo._corpus``'s rule: one's own projects when
    they hold a transcript, else ``../shared/corpus/claude-projects`` beside the clone, else the
    bundled ``fixtures/projects``."""
    from ingestd import demo

    none = {"HOME": str(tmp_path / "home")}  # no projects of one's own

    root = Path(demo.__file__).resolve().parents[1]
    para = " ".join((root / "README.md").read_text().split("`make demo` ", 1)[1].split("\n\n", 1)[0].split())
    shared = root.parent / "shared" / "corpus" / "claude-projects"
    assert "your own Claude Code projects (`~/.claude/projects`" in para
    assert "else the corpus at `../shared/corpus/claude-projects` beside the clone" in para
    assert "else the transcripts bundled in `fixtures/projects`" in para
    assert demo._corpus([], none) == (shared if shared.is_dir() else root / "fixtures" / "projects")
    fake = tmp_path / "clone" / "ingestd" / "demo.py"  # a clone with no corpus beside it: the fixtures
    fake.parent.mkdir(parents=True)
    monkeypatch.setattr(demo, "__file__", str(fake))
    assert demo._corpus([], none) == tmp_path / "clone" / "fixtures" / "projects"
    (tmp_path / "shared" / "corpus" / "claude-projects").mkdir(parents=True)
    assert demo._corpus([], none) == tmp_path / "shared" / "corpus" / "claude-projects"
