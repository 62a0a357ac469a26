"""The checksummed migration ledger (SPEC §6)."""

from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path

import apsw
import pytest

from ingestd.core import ledger
from ingestd.errors import MigrationError
from ingestd.store import migrate as migrate_mod
from ingestd.store.connection import connect
from ingestd.store.migrate import MIGRATIONS_DIR, applied, migrate


def schema_dump(conn: apsw.Connection) -> list[tuple[str, str, str]]:
    return list(conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name"))


def copy_migrations(tmp_path: Path) -> Path:
    d = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, d)
    return d


def test_pins_match_the_files_in_the_repo() -> None:
    on_disk = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in MIGRATIONS_DIR.glob("*.sql")}
    for pin in ledger.PINS:
        assert on_disk[f"{pin.id:04d}_{pin.name}.sql"] == pin.sha256


def test_legacy_ledger_without_checksums_is_upgraded_then_edits_are_caught(tmp_path: Path) -> None:
    path = tmp_path / "legacy.db"
    conn = connect(path)
    conn.execute("CREATE TABLE schema_version (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    sql = (MIGRATIONS_DIR / "0001_schema.sql").read_text()
    conn.execute(sql)
    conn.execute("INSERT INTO schema_version VALUES (1, 'schema', '2025-01-01T00:00:00.000Z')")
    applied_now = migrate(conn)
    assert [p.id for p in applied_now] == [p.id for p in ledger.PINS[1:]]
    assert applied(conn)[0].sha256 == ledger.PINS[0].sha256
    conn.execute("UPDATE schema_version SET checksum = 'x' WHERE id = 1")
    with pytest.raises(MigrationError):
        migrate(conn)


def test_failing_migration_rolls_back_and_leaves_no_ledger_row(tmp_path: Path) -> None:
    d = copy_migrations(tmp_path)
    n = ledger.PINS[-1].id + 1  # ids may skip numbers (taken by other branches)
    bad = d / f"{n:04d}_broken.sql"
    bad.write_text("CREATE TABLE ok_table (x);\nTHIS IS NOT SQL;\n")
    pins = (*ledger.PINS, ledger.Pin(n, "broken", hashlib.sha256(bad.read_bytes()).hexdigest()))
    conn = connect(tmp_path / "a.db")
    with pytest.raises(MigrationError, match=f"{n:04d}_broken failed and was rolled back"):
        migrate(conn, directory=d, pins=pins)
    assert [a.id for a in applied(conn)] == [p.id for p in ledger.PINS]
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'ok_table'").fetchall() == [(0,)]


def test_unpinned_file_is_refused(tmp_path: Path) -> None:
    d = copy_migrations(tmp_path)
    (d / "0099_extra.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=r"0099_extra\.sql is not pinned"):
        migrate(connect(tmp_path / "a.db"), directory=d)


def test_plan_is_pure_and_orders_ids() -> None:
    pins = (ledger.Pin(1, "a", "h1"), ledger.Pin(2, "b", "h2"))
    files = [ledger.FileOnDisk(1, "a", "h1"), ledger.FileOnDisk(2, "b", "h2")]
    p = ledger.plan(files, [ledger.Applied(1, "a", "h1")], pins)
    assert [x.id for x in p.pending] == [2] and not p.problems
    bad = ledger.plan(files, [], (ledger.Pin(2, "b", "h2"), ledger.Pin(1, "a", "h1")))
    assert any("strictly increasing" in m for m in bad.problems)


def test_a_migration_applied_by_another_process_after_the_plan_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `serve` and `ingest` started together on a new database both planned every migration; the
    # second then failed ("table events_raw already exists") and the daemon exited 2
    first = connect(tmp_path / "a.db")
    migrate(first)
    before = schema_dump(first)
    second = connect(tmp_path / "a.db")
    monkeypatch.setattr(migrate_mod, "applied", lambda conn: [])  # its plan predates the first's work
    assert migrate(second) == []
    assert schema_dump(second) == before


def test_two_processes_migrating_one_new_database_both_succeed(tmp_path: Path) -> None:
    for i in range(5):
        path = tmp_path / f"r{i}.db"
        conns = [connect(path), connect(path)]
        gate = threading.Barrier(2)
        errors: list[BaseException] = []

        def run(conn: apsw.Connection, gate: threading.Barrier = gate, errors: list[BaseException] = errors) -> None:
            gate.wait()
            try:
                migrate(conn)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=run, args=(c,)) for c in conns]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert [a.id for a in applied(conns[0])] == [p.id for p in ledger.PINS]
