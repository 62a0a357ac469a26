"""Edges projected by the daemon and by `ingestd ingest` carry the same identity, so replay agrees.

Regression: the daemon's tailer stamped edges with instance 'serve' while `ingest` and
`replay` used the database's identity, so replay failed on orchestration_edges once both
had run on one database.
"""

from __future__ import annotations

import sys
from pathlib import Path

from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.daemon.ingestrun import IngestRunner
from ingestd.projection.replay import replay
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


def test_daemon_tailer_then_ingest_then_replay_agree(tmp_path: Path) -> None:
    db = tmp_path / "ingestd.db"

    def open_conn():  # type: ignore[no-untyped-def]
        conn = connect(db)
        migrate(conn)
        return conn

    runner = IngestRunner(open_conn, [FIXTURES])
    runner._run(None)
    res = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(FIXTURES), "--json"])
    assert res.exit_code == 0, res.output
    conn = connect(db)
    stamps = conn.execute("SELECT DISTINCT instance, host_id FROM orchestration_edges").fetchall()
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('instance', 'host_id')").fetchall())
    assert stamps == [(meta["instance"], meta["host_id"])]
    result = replay(db, parallel_min_rows=sys.maxsize)
    assert result.comparison.ok, result.to_json()
