"""``ingestd migrate`` as the user sees it: what it says of a new database, of an up-to-date one and
of a re-projection with nothing to re-project."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.store.connection import connect


def test_migrate_of_a_missing_file_says_it_created_a_new_database(tmp_path: Path) -> None:
    """A database that did not exist is said to be new (a mistyped path shows at once), never
    "re-projected 0 log rows: the projector's rules changed"."""
    typo = tmp_path / "typo.db"
    res = CliRunner().invoke(cli, ["migrate", "--db", str(typo)])
    assert res.exit_code == 0, res.output
    assert f"created a new database at {typo}" in res.stdout
    assert "re-projected" not in res.output and "rules changed" not in res.output
    again = CliRunner().invoke(cli, ["migrate", "--db", str(typo)])
    assert again.stdout.strip() == "nothing pending: the schema is up to date"
    other = tmp_path / "other.db"
    doc = orjson.loads(CliRunner().invoke(cli, ["migrate", "--db", str(other), "--json"]).stdout)
    assert doc["created"] is True and doc["applied"]
    doc = orjson.loads(CliRunner().invoke(cli, ["migrate", "--db", str(other), "--json"]).stdout)
    assert doc["created"] is False and doc["applied"] == []


def test_migrate_of_an_empty_log_under_older_rules_reprojects_nothing_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    assert CliRunner().invoke(cli, ["migrate", "--db", str(db)]).exit_code == 0
    conn = connect(db)
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'projection_revision'")
    conn.close()
    res = CliRunner().invoke(cli, ["migrate", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert "re-projected 0" not in res.stdout and "nothing re-projected" in res.stdout


def test_cli_migrate_twice_says_nothing_pending(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "x.db")
    assert runner.invoke(cli, ["migrate", "--db", db]).exit_code == 0
    res = runner.invoke(cli, ["migrate", "--db", db])
    assert res.exit_code == 0 and "nothing pending" in res.output
    res = runner.invoke(cli, ["migrate", "--status", "--json", "--db", db])
    assert json.loads(res.output)["pending"] == []
