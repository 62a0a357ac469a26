"""Shipping (SPEC §13): exactly once across kill -9, dry run, passwords refused, prune keeps unshipped rows."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from click.testing import CliRunner

from ingestd.central.pg import check_url, describe
from ingestd.cli import cli
from ingestd.core import ledger
from ingestd.errors import ConfigError
from ingestd.store.connection import connect
from ingestd.store.identity import database_identity, shipped_through
from ingestd.store.migrate import MIGRATIONS_DIR, migrate
from ingestd.store.payload import decode as decode_payload
from tests.central.support import central_log, local_db, local_log, ship_all
from tests.conftest import CORPUS, REPO
from tests.reliability.daemon import record
from tests.seeded import seed
from tests.support import wait_for


def _source() -> Path:
    """The real corpus when present (15 MB of payloads: a COPY long enough to be killed in), else the fixtures."""
    corpus = CORPUS / "claude-projects"
    return corpus if corpus.is_dir() else REPO / "fixtures" / "projects"


def _ship_process(db: Path, url: str, batch_rows: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "ingestd", "ship", "--db", str(db), "--to", url, "--batch-rows", str(batch_rows)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _ship_backends(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as c:
        return c.execute(
            "SELECT pid, state, wait_event_type, query FROM pg_stat_activity"
            " WHERE application_name = 'ingestd' AND datname = current_database()"
        ).fetchall()


def _consistent(url: str, local: Any, host: str) -> int:
    """The store holds exactly the local rows up to the host's mark; returns the mark."""
    with psycopg.connect(url) as c:
        if c.execute("SELECT to_regclass('events_raw') IS NULL").fetchone() == (True,):
            return 0  # killed before the schema was committed: nothing shipped
        row = c.execute("SELECT shipped_through FROM hosts WHERE host_id = %s", (host,)).fetchone()
    mark = int(row[0]) if row else 0
    assert central_log(url, host) == local_log(local, mark)
    return mark


def test_kill_9_while_the_batch_is_in_flight_then_resume_is_exact(tmp_path: Path, pg_url: str) -> None:
    """The ship process dies inside its COPY (held there on a key the test's open transaction
    inserted): nothing of the batch and no mark remain, and the next ship sends exactly the log."""
    local = local_db(tmp_path / "a.db", [_source()], "host-k")
    ident = database_identity(local)
    first_key = local.execute("SELECT idempotency_key FROM events_raw ORDER BY id LIMIT 1").fetchall()[0][0]
    with psycopg.connect(pg_url, autocommit=True) as setup:
        from ingestd.central.migrate import migrate as pg_migrate

        pg_migrate(setup)
        setup.execute("INSERT INTO hosts (host_id, instance) VALUES (%s, %s)", (ident.host_id, ident.instance))
    blocker = psycopg.connect(pg_url)
    blocker.execute(
        "INSERT INTO events_raw (host_id, local_id, idempotency_key, source, event_type, payload, received_at, origin)"
        " VALUES (%s, 0, %s, 'jsonl', 'x', '\\x00', '2026-01-01T00:00:00.000Z', 'x')",
        (ident.host_id, first_key),
    )  # uncommitted: the ship's INSERT ... ON CONFLICT on that key waits for this transaction
    proc = _ship_process(tmp_path / "a.db", pg_url, 100_000)
    try:
        waiting = wait_for(
            "the ship to wait on the lock", lambda: [b for b in _ship_backends(pg_url) if b[2] == "Lock"]
        )
        assert "COPY events_raw" in waiting[0][3]  # inside the COPY, held on the key the test holds
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        blocker.rollback()
        blocker.close()
    wait_for("the ship's backends to end", lambda: not _ship_backends(pg_url))
    assert _consistent(pg_url, local, ident.host_id) == 0
    assert central_log(pg_url, ident.host_id) == []
    result = ship_all(local, pg_url)
    assert result.sent == result.inserted == len(local_log(local))
    assert central_log(pg_url, ident.host_id) == local_log(local)
    assert shipped_through(local) == result.shipped_through


@pytest.mark.slow  # kill -9 class: make reliability; the in-flight kill stays in make test
def test_kill_9_mid_copy_then_resume_is_exact(tmp_path: Path, pg_cluster: Any) -> None:
    """The ship process dies while its COPY streams (the whole log in one batch, watched in
    pg_stat_activity, no lock held up): the store keeps nothing of it, the next ship sends the log."""
    local = local_db(tmp_path / "a.db", [_source()], "host-c")
    host = database_identity(local).host_id
    for attempt in range(8):
        name = f"midcopy{attempt}"
        with psycopg.connect(pg_cluster.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        url = pg_cluster.url(name)
        with psycopg.connect(url, autocommit=True) as watch:
            proc = _ship_process(tmp_path / "a.db", url, 100_000)
            seen = False
            while proc.poll() is None and not seen:
                seen = bool(
                    watch.execute(
                        "SELECT 1 FROM pg_stat_activity WHERE application_name = 'ingestd'"
                        " AND datname = current_database() AND state = 'active' AND query LIKE 'COPY events_raw%%'"
                    ).fetchall()
                )
            if seen:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        if not seen:
            continue  # the COPY finished between two looks: try again on a fresh store
        wait_for("the ship's backends to end", lambda u=url: not _ship_backends(u))
        assert _consistent(url, local, host) == 0
        assert central_log(url, host) == []
        result = ship_all(local, url)
        assert result.sent == result.inserted == len(local_log(local))
        assert central_log(url, host) == local_log(local)
        return
    pytest.fail("never caught the ship inside its COPY in 8 attempts")


@pytest.mark.slow  # kill -9 class: make reliability; the in-flight kill stays in make test
def test_kill_9_at_random_moments_never_loses_or_doubles_a_row(tmp_path: Path, pg_url: str) -> None:
    local = local_db(tmp_path / "a.db", [_source()], "host-r")
    host = database_identity(local).host_id
    total = len(local_log(local))
    rng = random.Random(17)
    kills = 0
    marks: list[int] = []
    # the moments are fractions of what a whole ship takes on this machine now (a loaded machine
    # took longer than a fixed 0.6 s to commit the first batch, and no kill landed between batches)
    probe = pg_url.rsplit("/", 1)[0] + "/" + pg_url.rsplit("/", 1)[1] + "_probe"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {probe.rsplit('/', 1)[1]}")
    migrated = subprocess.run([sys.executable, "-m", "ingestd", "migrate", "--db", str(tmp_path / "a.db")], timeout=120)
    assert migrated.returncode == 0  # re-projected once, before any ship is timed
    timed = _ship_process(tmp_path / "a.db", probe, 700)
    wait_for("the timed ship to connect", lambda: _ship_backends(probe) or timed.poll() is not None)
    started = time.monotonic()  # from its connection to its end, as the kills below are timed
    assert timed.wait() == 0
    whole_s = time.monotonic() - started
    for _ in range(4):
        proc = _ship_process(tmp_path / "a.db", pg_url, 700)
        wait_for(
            "the ship to connect", lambda p=proc: _ship_backends(pg_url) or p.poll() is not None
        )  # connected: the ship has begun
        time.sleep(rng.uniform(0.1, 0.9) * whole_s)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        wait_for("the ship's backends to end", lambda: not _ship_backends(pg_url))
        marks.append(_consistent(pg_url, local, host))
    result = ship_all(local, pg_url)
    assert _consistent(pg_url, local, host) == local_log(local)[-1][0]
    assert len(central_log(pg_url, host)) == total
    assert result.inserted == result.sent  # nothing the resumed ship sent was already there
    assert kills >= 1
    assert any(0 < m < total for m in marks), marks  # some kill landed between the first and last batch


def test_dry_run_says_what_would_go_and_sends_nothing(tmp_path: Path, pg_url: str) -> None:
    path = tmp_path / "a.db"
    local_db(path, [REPO / "fixtures" / "projects"], "host-d").close()
    runner = CliRunner()
    res = runner.invoke(cli, ["ship", "--db", str(path), "--to", pg_url, "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    doc = orjson.loads(res.stdout)
    conn = connect(path)
    n = conn.execute("SELECT count(*) FROM events_raw").fetchall()[0][0]
    assert (doc["rows"], doc["host_id"], doc["shipped_through"]) == (n, "host-d", 0)
    # the bytes as read, which the store will hold, not the compressed bytes stored here
    raw = [decode_payload(conn, c, p) for c, p in conn.execute("SELECT codec, payload FROM events_raw")]
    stored = conn.execute("SELECT sum(length(payload)) FROM events_raw").fetchall()[0][0]
    assert doc["payload_bytes"] == sum(map(len, raw)) > stored
    with psycopg.connect(pg_url) as c:  # the dry run created nothing in the store
        assert c.execute("SELECT to_regclass('events_raw')").fetchone() == (None,)
    res = runner.invoke(cli, ["ship", "--db", str(path), "--to", pg_url, "--json"])
    assert res.exit_code == 0, res.output
    assert orjson.loads(res.stdout)["inserted"] == n
    res = runner.invoke(cli, ["ship", "--db", str(path), "--to", pg_url, "--dry-run", "--json"])
    assert orjson.loads(res.stdout)["rows"] == 0
    res = runner.invoke(cli, ["status", "--db", str(path), "--json"])
    host = orjson.loads(res.stdout)["host"]
    assert (host["host_id"], host["shipped_through"], host["unshipped_rows"]) == ("host-d", n, 0)
    conn.close()


def _database_through(path: Path, pins: tuple[ledger.Pin, ...]) -> None:
    """A database with only ``pins`` applied (none: a file ``connect`` made, no schema at all)."""
    older = path.parent / "migrations-older"
    older.mkdir()
    for pin in pins:
        shutil.copy(MIGRATIONS_DIR / f"{pin.stem}.sql", older / f"{pin.stem}.sql")
    conn = connect(path)
    migrate(conn, directory=older, pins=pins)
    conn.close()


@pytest.mark.parametrize("through", [len(ledger.PINS), len(ledger.PINS) - 1, 0], ids=["current", "older", "unmigrated"])
def test_a_dry_run_writes_nothing_to_the_local_database(tmp_path: Path, pg_url: str, through: int) -> None:
    # it used to open the database as a writer: migrations applied, a host id stored. A database
    # with migrations pending is where a dry run that migrates would show: it is refused, unchanged.
    path = tmp_path / "a.db"
    _database_through(path, ledger.PINS[:through])
    before = path.read_bytes()
    res = CliRunner().invoke(cli, ["ship", "--db", str(path), "--to", pg_url, "--dry-run", "--json"])
    if through == len(ledger.PINS):
        assert res.exit_code == 0, res.output
        assert orjson.loads(res.stdout)["host_id"] == socket.gethostname()
    else:
        assert res.exit_code == 2 and f"needs migrations {ledger.PINS[through].stem}" in res.output, res.output
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    with psycopg.connect(pg_url) as c:  # nor anything in the store
        assert c.execute("SELECT to_regclass('events_raw')").fetchone() == (None,)


def test_a_second_database_with_the_same_host_id_is_refused(tmp_path: Path, pg_url: str) -> None:
    a = local_db(tmp_path / "a.db", [REPO / "fixtures" / "projects"], "same-name")
    b = local_db(tmp_path / "b.db", [REPO / "fixtures" / "projects"], "same-name")
    ship_all(a, pg_url)
    with pytest.raises(ConfigError, match="already has host id 'same-name' for another ingestd database"):
        ship_all(b, pg_url)


@pytest.mark.parametrize(
    "url",
    ["postgresql://u:secret@db.example/ingestd", "host=db.example password=secret dbname=x"],
)
def test_a_password_in_the_url_is_refused_and_never_echoed(url: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="holds a password") as e:
        check_url(url)
    assert "secret" not in str(e.value)
    res = CliRunner().invoke(cli, ["ship", "--db", str(tmp_path / "x.db"), "--to", url])
    assert res.exit_code == 2 and "secret" not in res.output
    assert "secret" not in describe("postgresql://u@db.example:5433/ingestd?sslmode=verify-full")


def test_prune_refuses_while_rows_are_unshipped(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "seeded.db"
    conn = connect(path)
    migrate(conn)
    seed(conn)
    events = conn.execute("SELECT count(*) FROM events").fetchall()[0][0]
    assert events > 0
    monkeypatch.setenv("INGESTD_SHIP_TO", pg_url)
    runner = CliRunner()
    res = runner.invoke(cli, ["prune", "--db", str(path), "--events-older-than", "0"])
    assert res.exit_code == 2
    assert "refusing to prune events" in res.output and "not shipped" in res.output
    assert conn.execute("SELECT count(*) FROM events").fetchall()[0][0] == events  # nothing deleted
    res = runner.invoke(cli, ["ship", "--db", str(path)])  # ship_to from the setting
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["prune", "--db", str(path), "--events-older-than", "0"])
    assert res.exit_code == 0, res.output
    assert conn.execute("SELECT count(*) FROM events").fetchall()[0][0] == 0
    conn.close()


def test_a_restored_local_database_ships_its_new_rows(tmp_path: Path, pg_url: str) -> None:
    """Restored from a backup, the local log reuses ids the store has under other keys: the
    mark's key no longer matches, so the log is shipped again, skipping the keys the store has."""
    src = REPO / "fixtures" / "projects"
    root = tmp_path / "root"
    shutil.copytree(src, root)
    db = tmp_path / "a.db"
    local = local_db(db, [root], "host-b")
    local.close()
    shutil.copy(db, tmp_path / "backup.db")
    extra = root / "-home-u-new"
    extra.mkdir()
    (extra / "55555555-5555-4555-8555-555555555555.jsonl").write_bytes(
        b"".join(record("55555555-5555-4555-8555-555555555555", i, assistant=True) for i in range(6))
    )
    local = local_db(db, [root], "host-b")
    ship_all(local, pg_url)
    before = central_log(pg_url, "host-b")
    local.close()
    shutil.copy(tmp_path / "backup.db", db)  # the restore
    (extra / "55555555-5555-4555-8555-555555555555.jsonl").unlink()
    (extra / "66666666-6666-4666-8666-666666666666.jsonl").write_bytes(
        b"".join(record("66666666-6666-4666-8666-666666666666", i, assistant=True) for i in range(9))
    )
    local = local_db(db, [root], "host-b")
    result = ship_all(local, pg_url)
    keys = {r[1] for r in central_log(pg_url, "host-b")}
    assert {r[1] for r in local_log(local)} <= keys  # every row of the restored log is in the store
    assert {r[1] for r in before} <= keys  # and nothing shipped before was lost
    assert result.inserted == len(keys) - len(before) == 9
    assert ship_all(local, pg_url).sent == 0
    local.close()


def test_tls_settings_pass_through_to_libpq(pg_url: str) -> None:
    """``sslmode`` in the URL reaches libpq: this test server has no TLS, so requiring it fails there."""
    from ingestd.central.pg import connect as pg_connect
    from ingestd.errors import StorageError

    with pytest.raises(StorageError, match="SSL"):
        pg_connect(pg_url + "?sslmode=require")
    pg_connect(pg_url + "?sslmode=disable").close()


def test_the_daemons_shipper_migrates_and_registers_once_per_store_connection(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingestd.central import ship as ship_mod

    local = local_db(tmp_path / "s.db", [REPO / "fixtures" / "projects"], "host-once")
    local.close()
    prepared: list[str] = []
    real_prepare = ship_mod.prepare

    def counting(local: Any, pg: Any) -> Any:
        prepared.append("x")
        return real_prepare(local, pg)

    monkeypatch.setattr(ship_mod, "prepare", counting)
    shipper = ship_mod.Shipper(str(tmp_path / "s.db"), pg_url, batch_rows=5, max_batches=1)
    try:
        passes = [shipper.run_once() for _ in range(4)]
        assert [p.sent for p in passes][:2] == [5, 5] and prepared == ["x"]
        assert shipper._pg is not None
        shipper._pg.close()  # the store went away: the next pass reconnects and prepares again
        with pytest.raises(Exception):  # noqa: B017 - whatever the closed connection raises
            shipper.run_once()
        shipper.run_once()
        assert prepared == ["x", "x"]
    finally:
        shipper.close()
    assert len(central_log(pg_url, "host-once")) == sum(p.sent for p in passes) + 5
