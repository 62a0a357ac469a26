"""``status`` counts oversized lines as ``ingest --json`` does, and every read command's ``--json``
(``status``, ``sessions``, ``tree``, as ``cost``) carries ``stale_projection`` when the
projections are stale. Regression: ingest said "oversized lines 1 (see `ingestd
status`)" and status showed none; the staleness was only on stderr.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core.revision import PROJECTION_REVISION
from ingestd.store.connection import connect

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


def _ingest(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    root = tmp_path / "projects"
    shutil.copytree(FIXTURES, root)
    jsonl = sorted(root.rglob("*.jsonl"))[0]
    with jsonl.open("ab") as f:
        f.write(b'{"type": "user", "content": "' + b"x" * 20_000 + b'"}\n')
    db = tmp_path / "x.db"
    res = CliRunner().invoke(
        cli, ["ingest", "--db", str(db), "--projects", str(root), "--json"], env={"INGESTD_MAX_LINE_BYTES": "8192"}
    )
    assert res.exit_code == 0, res.output
    return db, orjson.loads(res.stdout)


def test_status_counts_the_oversized_lines_ingest_reported(tmp_path: Path) -> None:
    db, ingested = _ingest(tmp_path)
    assert ingested["oversized"] == 1
    doc = orjson.loads(CliRunner().invoke(cli, ["status", "--db", str(db), "--no-stat", "--json"]).stdout)
    assert doc["oversized"] == {"lines": 1}
    text = CliRunner().invoke(cli, ["status", "--db", str(db), "--no-stat"], terminal_width=200).stdout
    assert "oversized lines" in text and "1 line (longer than max_line_bytes" in text


def test_read_commands_json_carry_stale_projection(tmp_path: Path) -> None:
    db, _ = _ingest(tmp_path)
    fresh = orjson.loads(CliRunner().invoke(cli, ["status", "--db", str(db), "--no-stat", "--json"]).stdout)
    assert "stale_projection" not in fresh
    conn = connect(db)
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'projection_revision'")
    sid = str(conn.execute("SELECT id FROM sessions ORDER BY id LIMIT 1").fetchall()[0][0])
    conn.close()
    res = CliRunner().invoke(cli, ["status", "--no-stat", "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    stale = orjson.loads(res.stdout)["stale_projection"]
    assert stale["stored_revision"] == "4" and stale["fix"] == f"ingestd migrate --db {db}"
    for cmd in (["sessions"], ["tree", sid], ["cost"]):  # refused until migrated
        res = CliRunner().invoke(cli, [*cmd, "--db", str(db), "--json"])
        assert res.exit_code == 2 and res.stdout == "", (cmd, res.output)
        assert f"ingestd migrate --db {db}" in res.stderr, cmd
    # a newer ingestd's projections are read with the note (migrate cannot mend them)
    conn = connect(db)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'projection_revision'", (str(PROJECTION_REVISION + 1),))
    conn.close()
    for cmd in (["status", "--no-stat"], ["sessions"], ["tree", sid], ["cost"]):
        res = CliRunner().invoke(cli, [*cmd, "--db", str(db), "--json"])
        assert res.exit_code == 0, (cmd, res.output)
        assert orjson.loads(res.stdout)["stale_projection"]["fix"] == "upgrade ingestd", cmd
