"""``serve``'s start-up order: lock and port before any work, backup after the backfill,
the backfill's progress logged."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from ingestd.daemon import lock as lock_mod
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.ingestrun import BackfillProgress
from ingestd.daemon.main import serve
from ingestd.daemon.root import assemble
from ingestd.errors import DaemonError
from tests.reliability.support import q
from tests.support import until


async def test_a_taken_port_fails_before_the_database_is_touched(tmp_path: Path) -> None:
    db = tmp_path / "never.db"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(DaemonError, match=f"cannot listen on 127.0.0.1:{port}"):
            await serve(ServeConfig(db_path=db, port=port))
    # the lock is an flock on the database file itself, so the file may exist: empty, never migrated
    assert not db.exists() or db.stat().st_size == 0, "the database was migrated before the port was checked"
    lock_mod.acquire(db).release()  # the lock was released


async def test_a_held_lock_fails_before_the_port_or_the_database(tmp_path: Path) -> None:
    db = tmp_path / "held.db"
    held = lock_mod.acquire(db)
    try:
        with pytest.raises(DaemonError, match="already running"):
            await serve(ServeConfig(db_path=db, port=0))
    finally:
        held.release()
    assert not db.exists() or db.stat().st_size == 0, "the database was migrated before the lock was checked"


async def test_the_first_backup_waits_for_the_startup_backfill(
    tmp_path: Path, aiohttp_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INGESTD_SCHEDULE_ENABLED", "true")
    root = tmp_path / "projects"
    root.mkdir()
    db = tmp_path / "b.db"
    gate = asyncio.Event()
    done: list[str] = []

    async def slow_backfill(paths: Sequence[Path] | None) -> None:
        if paths is None and not done:
            await gate.wait()
            done.append("backfill")

    backups = tmp_path / "backups"
    cfg = ServeConfig(db_path=db, projects=(root,), watchdog_interval_s=3600, rescan_interval_s=3600)
    with capture_logs() as logs:
        await aiohttp_client(assemble(cfg, ingest=slow_backfill))
        await until("the schedule to wait", lambda: any(e["event"] == "schedule_waiting" for e in logs))
        for _ in range(20):  # give a wrongly ordered schedule every chance to run
            await asyncio.sleep(0.01)
        assert not backups.exists() or not list(backups.iterdir()), "a backup was taken before the backfill"
        gate.set()
        await until(
            "the backup's stamp", lambda: q(db, "SELECT count(*) FROM meta WHERE key = 'last_backup_at'")[0][0] == 1
        )
    assert done == ["backfill"]
    assert any(backups.glob("b-*.db"))


def test_backfill_progress_logs_start_progress_and_end() -> None:
    ticks = iter([0.0, 1.0, 6.0, 7.0, 13.0, 14.0])
    p = BackfillProgress(clock=lambda: next(ticks), log_every_s=5.0)
    with capture_logs() as logs:
        p.on_total(1000)
        p.advance(100)  # t=1: not yet
        p.advance(400)  # t=6: a progress line
        p.advance(100)  # t=7
        p.advance(400)  # t=13: a progress line
        p.close()  # t=14
    events = [(e["event"], e.get("bytes"), e.get("percent")) for e in logs]
    assert events == [
        ("backfill_started", None, None),
        ("backfill_progress", 500, 50.0),
        ("backfill_progress", 1000, 100.0),
        ("backfill_finished", 1000, 100.0),
    ]
    assert logs[0]["total_bytes"] == 1000 and logs[-1]["elapsed_s"] == 14.0
    # a file that grew while it was read: the bytes say so, the percentage stops at 100
    grown = BackfillProgress(clock=lambda: 0.0)
    with capture_logs() as logs:
        grown.on_total(100)
        grown.advance(150)
        grown.close()
    assert (logs[-1]["bytes"], logs[-1]["percent"]) == (150, 100.0)


def test_the_daemon_runner_shows_progress_for_the_startup_backfill_only(tmp_path: Path) -> None:
    from ingestd.daemon.ingestrun import IngestRunner
    from ingestd.store.connection import connect
    from ingestd.store.migrate import migrate
    from tests.daemon.support import user_line

    root = tmp_path / "projects"
    (root / "-tmp-p").mkdir(parents=True)
    sid = "11111111-2222-3333-4444-555555555555"
    (root / "-tmp-p" / f"{sid}.jsonl").write_bytes(user_line(sid, 1, text="hi", timestamp="2026-01-01T00:00:00.000Z"))
    db = tmp_path / "r.db"

    def open_conn() -> Any:
        conn = connect(db)
        migrate(conn)
        return conn

    runner = IngestRunner(open_conn, [root])
    try:
        with capture_logs() as logs:
            asyncio.run(runner(None))
            asyncio.run(runner(None))
    finally:
        runner.close()
    names = [e["event"] for e in logs]
    assert names.count("backfill_started") == 1 and names.count("backfill_finished") == 1
    finished = next(e for e in logs if e["event"] == "backfill_finished")
    assert finished["bytes"] == finished["total_bytes"] > 0


def test_the_configurations_defaults_are_the_settings_tables(tmp_path: Path) -> None:
    # one table of defaults: a configuration built from default settings equals the default configuration
    from ingestd.daemon.bind import DEFAULT_PORT
    from ingestd.settings import DEFAULTS

    built = ServeConfig.from_settings(DEFAULTS, db_path=tmp_path / "x.db", projects=(), token=None)
    assert built == ServeConfig(db_path=tmp_path / "x.db")
    assert built.port == DEFAULT_PORT == 7391 and built.host == "127.0.0.1"
    assert built.hooks.max_body_bytes == 1 << 20 and built.watchdog_window_s == 600.0


def test_the_serve_command_checks_port_and_lock_before_importing_the_daemon() -> None:
    import subprocess
    import sys

    code = (
        "import sys, ingestd.commands.serve as s\n"
        "assert 'aiohttp' not in sys.modules and 'ingestd.http.app' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
