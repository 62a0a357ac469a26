"""A database projected under older rules: migrate re-projects it; until then readers, verify and
replay say so and name the command (a regression: cost under-reported and marked complete, verify exit 0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core.revision import PROJECTION_REVISION
from ingestd.projection import rebuild, reproject
from ingestd.projection.dump import canonical_rows
from ingestd.projection.reproject import PROJECTION_TABLES, stored_revision
from ingestd.store.connection import connect

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


def dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = connect(db)
    return {t: canonical_rows(conn, t) for t in PROJECTION_TABLES}


def stale_db(tmp_path: Path) -> tuple[Path, dict[str, list[tuple[object, ...]]]]:
    """A database as an older ingestd left it after `migrate`: other rows, an older revision."""
    db = tmp_path / "x.db"
    res = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(FIXTURES)])
    assert res.exit_code == 0, res.output
    want = dump(db)
    conn = connect(db)
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'projection_revision'")
    conn.execute("UPDATE token_usage SET output = 0")
    conn.close()
    return db, want


def test_migrate_reprojects_a_stale_database(tmp_path: Path) -> None:
    db, want = stale_db(tmp_path)
    res = CliRunner().invoke(cli, ["migrate", "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    assert orjson.loads(res.stdout)["reprojected_log_rows"] > 0
    assert dump(db) == want
    assert stored_revision(connect(db)) == str(PROJECTION_REVISION)
    again = CliRunner().invoke(cli, ["migrate", "--db", str(db), "--json"])
    assert orjson.loads(again.stdout)["reprojected_log_rows"] is None


def test_readers_refuse_a_stale_projection_and_name_the_fix(tmp_path: Path) -> None:
    # Regression: figures of older rules were printed with exit 0 and only a note on stderr; a
    # database needing migrations is refused (exit 2), and so is one needing a re-projection
    db, _ = stale_db(tmp_path)
    for cmd in (["cost"], ["cost", "--json"], ["sessions"], ["sessions", "--json"], ["tree", "ffff"]):
        res = CliRunner().invoke(cli, [*cmd, "--db", str(db)])
        assert res.exit_code == 2, (cmd, res.output)
        assert res.stdout == "", cmd
        assert f"run `ingestd migrate --db {db}`" in res.stderr, cmd
    out = CliRunner().invoke(cli, ["status", "--db", str(db), "--json"])  # status still tells
    assert out.exit_code == 0, out.output
    assert orjson.loads(out.stdout)["stale_projection"]["stored_revision"] == "4"
    assert f"run `ingestd migrate --db {db}`" in out.stderr


def test_verify_and_replay_name_a_stale_projection(tmp_path: Path) -> None:
    db, _ = stale_db(tmp_path)
    res = CliRunner().invoke(cli, ["verify", "--db", str(db), "--json"])
    assert res.exit_code == 1
    failed = {c["name"]: c["details"] for c in orjson.loads(res.stdout)["checks"] if not c["ok"]}
    assert list(failed) == ["projection"]
    assert "ingestd migrate --db" in failed["projection"][0]
    rep = CliRunner().invoke(cli, ["replay", "--db", str(db), "--json"])
    assert rep.exit_code == 1
    assert "replay mismatch in token_usage" in rep.stderr and "ingestd migrate --db" in rep.stderr
    CliRunner().invoke(cli, ["migrate", "--db", str(db)])
    ok = CliRunner().invoke(cli, ["cost", "--db", str(db), "--json"])
    assert "stale_projection" not in orjson.loads(ok.stdout) and "note" not in ok.stderr
    assert CliRunner().invoke(cli, ["verify", "--db", str(db)]).exit_code == 0


def test_cost_and_replay_read_the_staleness_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # cost computed it in open_db and again itself; replay opened a second connection for its hint
    db, _ = stale_db(tmp_path)
    calls: list[object] = []
    real = reproject.stored_revision

    def counted(conn: Any) -> str | None:
        calls.append(conn)
        return real(conn)

    monkeypatch.setattr(reproject, "stored_revision", counted)
    res = CliRunner().invoke(cli, ["cost", "--db", str(db), "--json"])
    assert res.exit_code == 2 and "ingestd migrate --db" in res.stderr
    assert len(calls) == 1
    calls.clear()
    rep = CliRunner().invoke(cli, ["replay", "--db", str(db), "--json"])
    assert rep.exit_code == 1 and "ingestd migrate --db" in rep.stderr
    assert rep.stderr.count("note: ") == 1
    assert len(calls) == 1


def test_a_database_from_a_newer_ingestd_says_upgrade_and_migrate_does_not_downgrade_it(tmp_path: Path) -> None:
    """Regression: readers advised `ingestd migrate`, which re-projected with older rules."""
    db, _ = stale_db(tmp_path)
    newer = str(PROJECTION_REVISION + 1)
    conn = connect(db)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'projection_revision'", (newer,))
    conn.close()
    before = dump(db)
    for cmd in (["cost"], ["sessions"], ["status"]):
        out = CliRunner().invoke(cli, [*cmd, "--db", str(db)])
        assert f"newer ingestd (projection revision {newer} > {PROJECTION_REVISION}); upgrade ingestd" in out.stderr
        assert "ingestd migrate" not in out.stderr, cmd
    doc = orjson.loads(CliRunner().invoke(cli, ["cost", "--db", str(db), "--json"]).stdout)
    assert doc["stale_projection"]["fix"] == "upgrade ingestd"
    res = CliRunner().invoke(cli, ["migrate", "--db", str(db)])
    assert res.exit_code != 0
    assert "newer ingestd" in res.stderr and "upgrade ingestd" in res.stderr
    assert stored_revision(connect(db)) == newer
    assert dump(db) == before


def test_ctrl_c_during_migrates_reprojection_says_so_and_readers_say_run_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: half-built projections, "Aborted!" and only the generic stale note."""
    db, want = stale_db(tmp_path)

    def interrupted(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(rebuild, "rebuild_projections", interrupted)
    res = CliRunner().invoke(cli, ["migrate", "--db", str(db)])
    assert res.exit_code == 130
    assert "Aborted!" not in res.output
    assert "interrupted while re-projecting" in res.stderr and f"run `ingestd migrate --db {db}` again" in res.stderr
    monkeypatch.undo()
    # Regression: after a kill -9 / Ctrl-C mid re-projection, cost said 0 with exit 0: refused now
    for cmd in (["cost", "--json"], ["sessions"], ["tree", "ffff"], ["status"]):
        out = CliRunner().invoke(cli, [*cmd, "--db", str(db)])
        assert out.exit_code == (0 if cmd == ["status"] else 2), (cmd, out.output)
        assert "re-projection of this database was interrupted" in out.stderr, cmd
        assert f"run `ingestd migrate --db {db}` again" in out.stderr, cmd
    again = CliRunner().invoke(cli, ["migrate", "--db", str(db)])
    assert again.exit_code == 0, again.output
    assert dump(db) == want
    assert not connect(db).execute("SELECT 1 FROM meta WHERE key = 'reprojecting'").fetchall()
    assert "note" not in CliRunner().invoke(cli, ["sessions", "--db", str(db)]).stderr
