"""A database projected under older projector rules is re-projected from its log on first write open."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.commands._common import open_db
from ingestd.core.revision import PROJECTION_REVISION
from ingestd.projection.dump import canonical_rows
from ingestd.projection.reproject import PROJECTION_TABLES, stored_revision
from ingestd.store.connection import connect

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


def dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = connect(db)
    return {t: canonical_rows(conn, t) for t in PROJECTION_TABLES}


def test_stale_projections_are_rebuilt_and_the_revision_recorded(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    res = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(FIXTURES), "--json"])
    assert res.exit_code == 0, res.output
    want = dump(db)
    assert want["token_usage"] and want["agents"]
    conn = connect(db)
    assert stored_revision(conn) == str(PROJECTION_REVISION)
    # What an older ingestd might have left: other rows, and an older revision.
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'projection_revision'")
    conn.execute("UPDATE token_usage SET tokens = tokens + 1")
    conn.execute("DELETE FROM tool_calls")
    conn.execute("UPDATE agents SET subagent_type = 'stale'")
    open_db(db)
    assert dump(db) == want
    assert stored_revision(connect(db)) == str(PROJECTION_REVISION)


def test_current_projections_are_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(FIXTURES)])
    conn = connect(db)
    conn.execute("UPDATE token_usage SET tokens = tokens + 1")  # a tamper only replay should find
    tampered = dump(db)
    open_db(db)
    assert dump(db) == tampered
