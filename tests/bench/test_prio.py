"""``bench.prio`` runs end to end: a real daemon catches up a copied tree under busy loops while a
client posts hooks, and every hook is answered 2xx within the hook timeout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.prio import _table, one_run

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
