"""``ingestd db vacuum`` gives a database's free pages back, and ``migrate`` says when a migration
left many (a rewritten log); refused while a daemon serves the database."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.store.connection import connect, free_bytes
from tests.reliability.daemon import Daemon

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "upgrade" / "main-0021.db.gz"


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.output


def _log(db: Path) -> list[tuple[object, ...]]:
    conn = connect(db, readonly=True)
    try:
        return conn.execute("SELECT * FROM events_raw ORDER BY id").fetchall()
    finally:
        conn.close()


def test_a_migration_that_rewrote_the_log_names_the_vacuum_and_the_vacuum_gives_the_pages_back(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    db.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    code, out = _run("migrate", "--db", str(db))
    assert code == 0, out
    assert "free pages the migration left" in out and f"ingestd db vacuum --db {db}" in out
    conn = connect(db, readonly=True)
    free = free_bytes(conn)
    conn.close()
    log = _log(db)
    before = db.stat().st_size
    code, out = _run("db", "vacuum", "--db", str(db), "--json")
    assert code == 0, out
    doc = orjson.loads(out)
    assert doc["before_bytes"] == before and doc["after_bytes"] <= before - free + 4096
    conn = connect(db, readonly=True)
    assert free_bytes(conn) == 0
    conn.close()
    assert _log(db) == log
    code, out = _run("verify", "--db", str(db))
    assert code == 0, out
    # nothing pending, nothing to say
    code, out = _run("migrate", "--db", str(db))
    assert code == 0 and "vacuum" not in out, out


def test_vacuum_is_refused_while_a_daemon_serves_the_database(tmp_path: Path) -> None:
    d = Daemon.in_dir(tmp_path)
    d.start()
    try:
        code, out = _run("db", "vacuum", "--db", str(d.db))
    finally:
        d.stop()
    assert code != 0 and "serves" in out and "stop it first" in out, out
    code, out = _run("db", "vacuum", "--db", str(d.db))
    assert code == 0, out


def test_vacuum_of_no_database_says_so(tmp_path: Path) -> None:
    code, out = _run("db", "vacuum", "--db", str(tmp_path / "none.db"))
    assert code != 0 and "no database at" in out, out
    assert not (tmp_path / "none.db").exists()
