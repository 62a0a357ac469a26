"""The daemon knows its file: once the database path names another file (``mv backup.db ingestd.db``)
or none (``rm ingestd.db*``), no commit is acknowledged (503 with the reason, rolled back), health
says why, and the single-daemon lock still refuses a second daemon on that path."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.daemon import lock
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.fileguard import FileGuard
from ingestd.daemon.root import assemble
from ingestd.errors import DaemonError
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.hookclient import JSON_HEADERS
from tests.support import until

SID = "11111111-2222-3333-4444-555555555555"


def _body(i: int) -> bytes:
    return orjson.dumps({"hook_event_name": "PreToolUse", "session_id": SID, "tool_use_id": f"t{i}", "tool_name": "X"})


def _fresh(path: Path) -> None:
    conn = connect(path)
    migrate(conn)
    conn.close()


def _log_rows(path: Path) -> list[Any]:
    conn = connect(path, readonly=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return conn.execute("SELECT idempotency_key FROM events_raw ORDER BY id").fetchall()
    finally:
        conn.close()


def test_the_guard_names_a_replaced_and_a_deleted_file(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    db.write_bytes(b"")
    g = FileGuard.of(db)
    assert g.check() is None
    (tmp_path / "other").write_bytes(b"")
    os.replace(tmp_path / "other", db)
    assert "was replaced by another file" in (g.check() or "")
    db.unlink()
    assert "was replaced" in (g.check() or "")  # the first reason is kept
    g2 = FileGuard((tmp_path / "gone.db"), (0, 0))
    assert "was deleted while the daemon ran" in (g2.check() or "")


def test_a_replaced_database_file_keeps_the_lock_on_its_path(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    held = lock.acquire(db)
    try:
        (tmp_path / "backup.db").write_bytes(b"")
        os.replace(tmp_path / "backup.db", db)  # a new inode at the path, not locked
        with pytest.raises(DaemonError, match=rf"pid {os.getpid()}\).*lock file .*d\.db\.lock is held"):
            lock.acquire(db)
    finally:
        held.release()
    lock.acquire(db).release()  # free once the first lets go


@pytest.mark.parametrize("how", ["replace", "delete"])
async def test_no_hook_is_acknowledged_once_the_path_names_another_file(
    tmp_path: Path, aiohttp_client: Any, how: str
) -> None:
    db = tmp_path / "d.db"
    _fresh(db)
    shutil.copy(db, tmp_path / "backup.db")
    before = _log_rows(tmp_path / "backup.db")
    cfg = ServeConfig(db_path=db, tail=False, schedule=False, watchdog_interval_s=3600)
    guard = FileGuard.of(db)
    lost: list[bool] = []
    app = assemble(cfg, file_guard=guard, on_file_lost=lambda: lost.append(True))
    client = await aiohttp_client(app, headers=JSON_HEADERS)
    assert (await client.post("/hooks", data=_body(0))).status == 200
    if how == "replace":
        os.replace(tmp_path / "backup.db", db)
    else:
        for f in tmp_path.glob("d.db*"):
            f.unlink()
    r = await client.post("/hooks", data=_body(1))
    assert r.status == 503
    why = "was replaced by another file" if how == "replace" else "was deleted while the daemon ran"
    assert why in (await r.json())["error"]["message"]
    health = await client.get("/api/health")
    assert health.status == 503 and why in (await health.json())["error"]["message"]
    await until("the lost file is seen", lambda: lost)
    if how == "replace":  # the file at the path now: as restored, the old WAL beside it emptied
        assert (tmp_path / "d.db-wal").stat().st_size == 0
        assert _log_rows(db) == before
