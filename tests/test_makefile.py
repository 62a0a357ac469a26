"""``make demo CORPUS=...`` passes the corpus path as one argument, spaces and quotes included.

Regression: ``make demo CORPUS="dir with space"`` ran ``ingestd.demo dir with space``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("corpus", ["dir with space", "it's here", ""])
def test_demo_passes_the_corpus_whole(corpus: str, tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("no make")
    # a stamp newer than pyproject.toml: the install step counts as done and only the demo's command
    # line is printed. (STAMP=Makefile made the Makefile a target, and GNU make remakes a makefile
    # even under -n: in a fresh clone, where pyproject.toml is checked out after it, that ran pip.)
    stamp = tmp_path / "installed"
    stamp.touch()
    r = subprocess.run(
        ["make", "-s", "-n", "demo", f"CORPUS={corpus}", f"STAMP={stamp}"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    argv = shlex.split(r.stdout.strip().splitlines()[-1])
    assert argv[-3:] == ["-m", "ingestd.demo", corpus]
