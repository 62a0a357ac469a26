"""The daemon follows the ``ship_to`` setting (SPEC §13): what it logs reaches the central store."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from ingestd.store.connection import connect
from tests.conftest import REPO
from tests.reliability.daemon import Daemon, record
from tests.support import free_port

INGESTD = [sys.executable, "-m", "ingestd"]


def _counts(db: Path, url: str) -> tuple[int, int]:
    conn = connect(db, readonly=True)
    try:
        local = int(conn.execute("SELECT count(*) FROM events_raw").fetchall()[0][0])
    finally:
        conn.close()
    with psycopg.connect(url) as c:
        exists = c.execute("SELECT to_regclass('events_raw') IS NOT NULL").fetchone()
        central = int((c.execute("SELECT count(*) FROM events_raw").fetchone() or (0,))[0]) if exists == (True,) else 0
    return local, central


def _caught_up(db: Path, url: str, at_least: int, timeout_s: float = 30.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if db.exists():
            local, central = _counts(db, url)
            if local >= at_least and central == local:
                return central
        time.sleep(0.1)
    raise AssertionError(f"not shipped in time: {_counts(db, url)}")


@pytest.mark.timeout(90)
def test_serve_ships_the_log_batch_by_batch(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "projects"
    shutil.copytree(REPO / "fixtures" / "projects", root)
    monkeypatch.setenv("INGESTD_SHIP_TO", pg_url)
    monkeypatch.setenv("INGESTD_SHIP_INTERVAL_S", "1")
    monkeypatch.setenv("INGESTD_SHIP_BATCH_ROWS", "7")
    db = tmp_path / "d.db"
    daemon = Daemon(db, root, free_port(), tmp_path / "serve.log")
    daemon.start()
    try:
        first = _caught_up(db, pg_url, 1)
        sid = "abcdef01-0000-4000-8000-000000000000"
        (root / "-tmp-live").mkdir()
        (root / "-tmp-live" / f"{sid}.jsonl").write_bytes(
            b"".join(record(sid, i, assistant=i % 2 == 0) for i in range(5))
        )
        assert _caught_up(db, pg_url, first + 5) >= first + 5
    finally:
        assert daemon.stop() == 0
    assert "ship_failed" not in (tmp_path / "serve.log").read_text()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://me:hunter2@127.0.0.1:1/x", "holds a password"),
        ("not a url", "not a PostgreSQL URL or connection string"),
        ("mysql://me@127.0.0.1/x", "mysql:// is not a PostgreSQL URL"),
    ],
)
def test_a_ship_to_the_daemon_can_never_use_refuses_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, says: str
) -> None:
    # it used to start, log `ship_disabled` once and never ship: nobody reads that line
    root = tmp_path / "projects"
    root.mkdir()
    monkeypatch.setenv("INGESTD_SHIP_TO", url)
    db = tmp_path / "d.db"
    proc = subprocess.run(
        [*INGESTD, "serve", "--db", str(db), "--projects", str(root), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and "hunter2" not in proc.stderr + proc.stdout
    assert not db.exists()
