"""``ingestd verify``: each check passes on a sound database and fails, named, when broken."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import apsw
import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.projection.verify import run_checks
from ingestd.store.connection import Db, connect


def _run(db: Path) -> tuple[int, dict[str, object]]:
    res = CliRunner().invoke(cli, ["verify", "--db", str(db), "--json"])
    return res.exit_code, orjson.loads(res.stdout)


def _failed(doc: dict[str, object]) -> set[str]:
    checks = doc["checks"]
    assert isinstance(checks, list)
    return {c["name"] for c in checks if not c["ok"]}


def _snapshot(db: Path) -> list[tuple[object, ...]]:
    conn = connect(db)
    out: list[tuple[object, ...]] = []
    for t in ("events_raw", "token_usage", "token_usage_rollup", "events", "sessions"):
        out += [(t, *r) for r in conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2")]
    return out


def test_sound_database_passes_and_changes_nothing(db_path: Path) -> None:
    before = _snapshot(db_path)
    code, doc = _run(db_path)
    assert code == 0, doc
    assert doc["ok"] is True
    assert not _failed(doc)
    assert _snapshot(db_path) == before


def test_empty_log_probes_triggers_without_leaving_a_row(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    assert CliRunner().invoke(cli, ["migrate", "--db", str(db)]).exit_code == 0
    code, doc = _run(db)
    assert code == 0, doc
    assert connect(db).execute("SELECT count(*) FROM events_raw").fetchall() == [(0,)]


def test_dropped_rollup_row_fails_rollup(db_path: Path) -> None:
    conn = connect(db_path)
    conn.execute(
        "DELETE FROM token_usage_rollup WHERE (session_id, model, slot) IN "
        "(SELECT session_id, model, slot FROM token_usage_rollup LIMIT 1)"
    )
    conn.close()
    code, doc = _run(db_path)
    assert code == 1
    assert _failed(doc) == {"rollup"}


def test_missing_trigger_fails_append_only_and_touches_nothing(db_path: Path) -> None:
    conn = connect(db_path)
    conn.execute("DROP TRIGGER log_rows_no_delete")
    conn.close()
    before = connect(db_path).execute("SELECT count(*) FROM events_raw").fetchall()
    checks = {c.name: c for c in run_checks(connect(db_path))}
    assert not checks["append_only"].ok
    assert any("log_rows_no_delete is missing" in d for d in checks["append_only"].details)
    assert any("DELETE on log_rows was NOT refused" in d for d in checks["append_only"].details)
    assert connect(db_path).execute("SELECT count(*) FROM events_raw").fetchall() == before


def test_usage_without_log_message_fails(db_path: Path) -> None:
    conn = connect(db_path)
    conn.execute(
        "INSERT INTO token_usage (session_id, message_id, model, input, occurred_at) "
        "VALUES ('sess-0', 'msg_ghost', 'claude-opus-4-6', 1, '2026-01-01T00:00:00.000Z')"
    )
    conn.close()
    code, doc = _run(db_path)
    assert code == 1
    assert _failed(doc) == {"usage_in_log"}
    assert "msg_ghost" in orjson.dumps(doc).decode()


def test_dangling_foreign_key_fails(db_path: Path) -> None:
    conn = connect(db_path)
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("INSERT INTO agents (id, session_id, type, status) VALUES ('orphan', 'nope', 'subagent', 'working')")
    conn.close()
    code, doc = _run(db_path)
    assert code == 1
    assert _failed(doc) == {"foreign_keys"}


def test_tampered_ledger_checksum_fails(db_path: Path) -> None:
    conn = connect(db_path)
    conn.execute("UPDATE schema_version SET checksum = 'deadbeef' WHERE id = 2")
    conn.close()
    code, doc = _run(db_path)
    assert code == 1
    assert "ledger" in _failed(doc)


def test_human_output_names_failure(db_path: Path) -> None:
    """``verify`` without ``--json`` names the failed check on its FAIL line and exits 1."""
    conn = connect(db_path)
    conn.execute("DELETE FROM token_usage_rollup")
    conn.close()
    res = CliRunner().invoke(cli, ["verify", "--db", str(db_path)])
    assert res.exit_code == 1
    assert "FAIL  rollup" in res.stdout


def test_probe_rolls_back_even_when_trigger_missing(db_path: Path) -> None:
    conn = connect(db_path)
    conn.execute("DROP TRIGGER events_raw_no_update")
    conn.execute("DROP TRIGGER events_raw_no_delete")
    rows = conn.execute("SELECT * FROM events_raw ORDER BY id").fetchall()
    checks = {c.name: c for c in run_checks(conn)}
    assert not checks["append_only"].ok
    assert conn.execute("SELECT * FROM events_raw ORDER BY id").fetchall() == rows
    assert isinstance(conn, apsw.Connection) and conn.in_transaction is False


def test_an_infinite_rate_fails_prices(db_path: Path) -> None:
    conn = connect(db_path)
    conn.execute(
        "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
        " VALUES ('claude-opus-4-6', 'input', 1e400, '2026-01-02', 'typo')"
    )
    code, doc = _run(db_path)
    assert code == 1
    assert _failed(doc) == {"prices"}


def test_append_only_probe_waits_for_a_writer_instead_of_failing(db_path: Path) -> None:
    # Regression: `verify` beside a busy daemon said "FAIL append_only: check could not run: database
    # is locked" one run in two: its deferred transaction read, then could not become a write after
    # the daemon committed. It now takes the write lock first, waiting as any writer does.
    from ingestd.projection.verify import check_append_only

    writer = connect(db_path)
    holding, waiting = threading.Event(), threading.Event()

    def daemon_commit() -> None:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO ingest_stats (name, value) VALUES ('probe', 1) ON CONFLICT DO NOTHING")
        holding.set()
        waiting.wait(5)  # the check is waiting for this transaction's lock: commit now
        writer.execute("COMMIT")

    t = threading.Thread(target=daemon_commit)
    t.start()
    holding.wait(5)
    checker = connect(db_path)

    def busy(tries: int) -> bool:  # SQLite's retry while the writer holds the lock (as busy_timeout)
        waiting.set()
        time.sleep(0.002)
        return tries < 5_000

    checker.set_busy_handler(busy)
    try:
        got = check_append_only(checker)
    finally:
        t.join()
    assert waiting.is_set()  # it did meet the writer's transaction, and waited
    assert got.ok, got.details


def test_a_read_only_database_file_is_checked_without_probes(db_path: Path) -> None:
    # Regression: a database the user may read but not write failed verify ("attempt to write a
    # readonly database"); its triggers are still checked, the probes are said to be skipped.
    from ingestd.projection.verify import check_append_only

    conn = Db(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    got = check_append_only(conn)
    assert got.ok and "not probed: the database file is read-only" in got.details[0], got.details
    conn.execute("PRAGMA query_only = 1")
    rw = connect(db_path)
    rw.execute("DROP TRIGGER events_raw_no_delete")
    assert not check_append_only(conn).ok
