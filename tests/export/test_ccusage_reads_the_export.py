"""A peer reads what ``ingestd export`` writes as it read the original: ccusage 20 (``daily --json``)
gives the same days, models and totals for the real corpus and for its export (the source deleted
before the export), and those totals are ingestd's own.

ccusage comes from npm into ``$XDG_CACHE_HOME/ingestd-test/ccusage-20.0.24`` (``.ci/run`` installs it);
without it the test skips with that reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.export.test_export import ingest, run

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "claude-projects"
CCUSAGE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "ingestd-test"
    / "ccusage-20.0.24"
    / "node_modules"
    / ".bin"
    / "ccusage"
)


def ccusage_daily(config_dir: Path) -> Any:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config_dir), "TZ": "UTC"}
    r = subprocess.run([str(CCUSAGE), "daily", "--json", "--offline"], capture_output=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return json.loads(r.stdout)


@pytest.mark.skipif(not CCUSAGE.exists(), reason=f"ccusage 20 is not installed at {CCUSAGE} (.ci/run installs it)")
@pytest.mark.skipif(not CORPUS.is_dir(), reason="the real corpus (../shared/corpus) is not beside the clone")
def test_ccusage_reads_the_export_of_the_real_corpus_as_the_original(tmp_path: Path) -> None:
    original = tmp_path / "original"
    shutil.copytree(CORPUS, original / "projects")
    before = ccusage_daily(original)
    db = tmp_path / "i.db"
    ingest(db, original / "projects")
    shutil.rmtree(original)  # the transcripts Claude Code deleted
    exported = tmp_path / "exported"
    r = run("export", "--db", str(db), "--to", str(exported / "projects"))
    assert r.exit_code == 0, r.output
    after = ccusage_daily(exported)
    assert after == before, "ccusage reads the export exactly as it read the original"
    ours = json.loads(run("cost", "--db", str(db), "--json").output)
    t = after["totals"]
    assert t["totalTokens"] == ours["tokens"] > 0
    assert t["inputTokens"] == ours["totals"]["input"] and t["outputTokens"] == ours["totals"]["output"]
    assert t["cacheReadTokens"] == ours["totals"]["cache_read"]
    assert t["cacheCreationTokens"] == ours["totals"]["cache_write_5m"] + ours["totals"]["cache_write_1h"]
    assert abs(Decimal(str(t["totalCost"])) - Decimal(ours["cost_usd"])) < Decimal("0.000001")
    assert len(after["daily"]) > 10
