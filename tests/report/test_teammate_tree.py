"""``tree`` shows a teammate (agent teams) under its lead by name, with its own tokens and cost."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ingestd.cli import cli
from tests.core.test_teammates import SID, _files


def test_tree_shows_a_teammate_by_name_with_its_own_cost(tmp_path: Path) -> None:
    _files(tmp_path / "projects", {"prompt": "research", "description": "r", "team_name": "crew", "name": "alice"})
    db = str(tmp_path / "t.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", "--db", db, "--projects", str(tmp_path / "projects")]).exit_code == 0
    r = runner.invoke(cli, ["tree", SID, "--db", db, "--json"])
    (child,) = json.loads(r.stdout)["tree"]["children"]
    assert (child["type"], child["name"], child["own"]["tokens"]) == ("teammate", "alice", 120)
    text = runner.invoke(cli, ["tree", SID, "--db", db], env={"COLUMNS": "120"}).stdout
    assert "teammate alice" in text
