"""``make demo CORPUS=...`` passes the corpus path as one argument, spaces and quotes included.

Regression: ``make demo CORPUS="dir with space"`` ran ``ingestd.demo dir with space``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
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


def test_demo_reads_your_own_projects_by_default_and_corpus_still_wins(tmp_path: Path) -> None:
    from ingestd.demo import _corpus

    home = tmp_path / "home"
    own = home / ".claude" / "projects"
    env = {"HOME": str(home)}
    assert _corpus([], env) != own, "no ~/.claude/projects: the corpus or the fixtures"
    (own / "-home-me-code").mkdir(parents=True)
    assert _corpus([], env) != own, "an empty projects folder is not worth a demo"
    (own / "-home-me-code" / "s.jsonl").write_text("{}\n")
    assert _corpus([], env) == own
    assert _corpus([""], env) == own, "make demo with CORPUS empty"
    assert _corpus(["/some/where"], env) == Path("/some/where"), "CORPUS= still wins"
    assert _corpus([], {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "none")}) != own


def test_make_test_says_why_each_test_was_skipped(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("no make")
    stamp = tmp_path / "installed"
    stamp.touch()
    r = subprocess.run(
        ["make", "-s", "-n", "test", f"STAMP={stamp}"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=30
    )
    argv = shlex.split(r.stdout.strip().splitlines()[-1])
    assert "pytest" in argv[0] or any(a.endswith("pytest") for a in argv), argv
    assert "-rfEs" in argv, "the skip reasons are summarised, the failures and errors too"


def _dry(*args: str, stamp: Path) -> str:
    if shutil.which("make") is None:
        pytest.skip("no make")
    r = subprocess.run(
        ["make", "-s", "-n", *args, f"STAMP={stamp}"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=30
    )
    return r.stdout


def test_a_fresh_clone_installs_without_the_editable_install_banner(tmp_path: Path) -> None:
    fresh = _dry("install", stamp=tmp_path / "not-yet")  # a fresh clone: the install runs first
    [editable] = [line for line in fresh.splitlines() if "install -q -e" in line]
    assert editable.startswith("PYTHONWARNINGS=ignore "), editable


STRAY = """
import threading
import time

from ingestd.logs import get_logger


def test_a_thread_logging_across_the_phases():
    log = get_logger("tests.stray")
    stop = threading.Event()

    def storm():
        while not stop.wait(0.0005):
            log.warning("stray_line")

    t = threading.Thread(target=storm, daemon=True)
    t.start()
    time.sleep(0.2)
    # left running into the report: a daemon thread a test did not stop


def test_more():
    time.sleep(0.2)
"""


def test_a_thread_left_logging_prints_nothing_into_the_test_report(tmp_path: Path) -> None:
    (tmp_path / "test_stray.py").write_text(STRAY)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "stray_line" not in r.stdout + r.stderr, (r.stdout + r.stderr)[-2000:]
