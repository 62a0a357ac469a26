"""``make demo CORPUS=...`` passes the corpus path as one argument, spaces and quotes included.

Regression (breaker3): ``make demo CORPUS="dir with space"`` ran ``ingestd.demo dir with space``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("corpus", ["dir with space", "it's here", ""])
def test_demo_passes_the_corpus_whole(corpus: str) -> None:
    if shutil.which("make") is None:
        pytest.skip("no make")
    # STAMP=Makefile: the install step is already done, only the demo's command line is printed
    r = subprocess.run(
        ["make", "-s", "-n", "demo", f"CORPUS={corpus}", "STAMP=Makefile"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    argv = shlex.split(r.stdout.strip().splitlines()[-1])
    assert argv[-3:] == ["-m", "ingestd.demo", corpus]
