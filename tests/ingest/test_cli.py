"""``ingestd ingest``: JSON summary, fatal errors as one line and a non-zero exit."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ingestd.cli import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


def test_json_summary_counts_skips(tmp_path: Path) -> None:
    """``ingest --json`` counts the skipped lines by reason, and the sessions and messages it read."""
    r = CliRunner().invoke(cli, ["ingest", "--projects", str(FIXTURES), "--db", str(tmp_path / "x.db"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["skipped"] == {"not_json": 1} and doc["sessions"] == 4 and doc["messages"] == 15


def test_missing_root_is_fatal(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["ingest", "--projects", str(tmp_path / "nope"), "--db", str(tmp_path / "x.db")])
    assert r.exit_code == 2
    assert "is not a readable directory" in r.output
