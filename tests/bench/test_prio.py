"""``bench.prio`` runs end to end: a real daemon catches up a copied tree under busy loops while a
client posts hooks, and every hook is answered 2xx within the hook timeout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.prio import BEGIN, END, Run, _table, one_run, render_section
from bench.run import kept_sections
from bench.table import write_marked

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a real daemon and CPU hogs: make reliability
@pytest.mark.timeout(180)
def test_prio_catches_up_and_answers_every_hook(tmp_path: Path) -> None:
    if not (REPO / ".venv/bin/ingestd").exists():
        pytest.skip("no .venv in this tree")
    shutil.copytree(REPO / "fixtures" / "projects", tmp_path / "corpus" / "projects")
    run = one_run("here", REPO, tmp_path / "corpus", hogs=2, interval_s=0.02, max_s=60.0)
    assert run.hooks > 0 and run.failed == 0
    assert run.max_ms < 2000.0  # the daemon's hook timeout: a slower hook would have been a 503
    assert run.catchup_s < 60.0  # every file checkpointed
    assert "| here |" in _table([run], ["here"])


def test_its_section_judges_the_target_and_is_kept_once(tmp_path: Path) -> None:
    """``--section`` writes the medians against SPEC §11's target; ``bench.run`` keeps the section."""
    runs = [Run("this", 300.0, p99, 100, 0, 0, 20.0, 8.0) for p99 in (90.0, 120.0, 150.0)]
    section = render_section(runs, Path("bench/cache/c1000"), 2, 20.0, "python -m bench.prio", "1 -> 1")
    assert "| this | 120 ms | < 100 ms | **misses** |" in section
    assert "| this | 90 ms | < 100 ms | meets |" in render_section(runs[:1], Path("c"), 2, 20.0, "c", "l")
    out = tmp_path / "B.md"
    out.write_text("# Benchmarks\n\n## Figures\n")
    write_marked(out, section, BEGIN, END)
    write_marked(out, section, BEGIN, END)
    assert out.read_text().count(BEGIN) == 1
    assert kept_sections(out.read_text()).count(BEGIN) == 1
