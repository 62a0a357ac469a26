"""A failing writer is probed until it writes again: ``/api/health`` recovers without a hook."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

from ingestd.core.records import NewLogRow
from ingestd.daemon import hookwriter
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import assemble
from ingestd.errors import StorageError
from ingestd.http.health import WRITER, Health
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.hookclient import JSON_HEADERS
from tests.support import until

SID = "11111111-2222-3333-4444-555555555555"
# incompressible (random hex): the rows need new pages
BODY = orjson.dumps(
    {
        "hook_event_name": "PreToolUse",
        "session_id": SID,
        "transcript_path": "/x",
        "cwd": "/x",
        "tool_name": "Bash",
        "tool_input": {"command": os.urandom(20000).hex()},
        "tool_use_id": "toolu_1",
    }
)


async def test_a_writer_failed_by_a_full_database_is_healthy_again_without_a_hook(
    tmp_path: Path, aiohttp_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hookwriter, "PROBE_INTERVAL_S", 0.05)
    full = [True]

    def filling(conn: apsw.Connection, batch: Sequence[NewLogRow]) -> int:
        # a real SQLITE_FULL: the database may not grow while "the disk is full"
        pages = conn.execute("PRAGMA page_count").fetchall()[0][0]
        conn.execute(f"PRAGMA max_page_count = {pages if full[0] else 1 << 30}")
        return hookwriter.store_rows(conn, batch)

    cfg = ServeConfig(db_path=tmp_path / "f.db", tail=False, schedule=False, watchdog_interval_s=3600)
    client = await aiohttp_client(assemble(cfg, apply=filling), headers=JSON_HEADERS)
    r = await client.post("/hooks", data=BODY)
    assert r.status == 500
    health = await client.get("/api/health")
    assert health.status == 503
    assert "database or disk is full" in (await health.json())["error"]["message"]
    real_probe = hookwriter.probe

    probes = [0]

    def probe(conn: apsw.Connection) -> None:  # the probe meets the same disk: refused while it is full
        probes[0] += 1
        if full[0]:
            raise StorageError("database error: database or disk is full")
        real_probe(conn)

    monkeypatch.setattr(hookwriter, "probe", probe)
    await until("ten probes on the full disk", lambda: probes[0] >= 10)
    assert (await client.get("/api/health")).status == 503  # each refused: still failing
    full[0] = False  # room again, and no hook arrives

    async def healthy() -> bool:
        return (await client.get("/api/health")).status == 200

    for _ in range(200):
        if await healthy():
            break
        await asyncio.sleep(0.02)
    assert await healthy()
    assert (await client.post("/hooks", data=BODY)).status == 200


class _Refusing:
    """A writer whose every write is refused (the disk is still full)."""

    def __init__(self) -> None:
        self.calls = 0

    async def call(self, fn: Callable[[apsw.Connection], Any]) -> Any:
        self.calls += 1
        raise StorageError("database error: database or disk is full")


async def test_a_refused_probe_leaves_the_failure_and_its_age() -> None:
    now = [100.0]
    health = Health(clock=lambda: now[0])
    health.failed(WRITER, "the last write failed: database error: database or disk is full")
    writer, stop = _Refusing(), asyncio.Event()
    task = asyncio.create_task(hookwriter.probe_loop(writer, health, stop, interval_s=0.01))  # type: ignore[arg-type]
    await until("three probes", lambda: writer.calls >= 3)
    now[0] = 130.0
    assert health.problems() == [
        "writer failing for 30.0 s: the last write failed: database error: database or disk is full"
    ]
    stop.set()
    await asyncio.wait_for(task, 5)


class _FailingMeanwhile:
    """A writer whose probe succeeds while another write fails with the very same text."""

    def __init__(self, health: Health, reason: str) -> None:
        self.health, self.reason, self.calls = health, reason, 0

    async def call(self, fn: Callable[[apsw.Connection], Any]) -> Any:
        self.calls += 1
        self.health.failed(WRITER, self.reason)  # a hook's write failed while the probe ran
        return None


async def test_a_failure_during_the_probe_is_not_cleared_by_its_success() -> None:
    reason = "the last write failed: database error: database or disk is full"
    health = Health()
    health.failed(WRITER, reason)
    writer, stop = _FailingMeanwhile(health, reason), asyncio.Event()
    task = asyncio.create_task(hookwriter.probe_loop(writer, health, stop, interval_s=0.01))  # type: ignore[arg-type]
    await until("three probes", lambda: writer.calls >= 3)
    failure = health.failure(WRITER)
    assert failure is not None and failure.reason == reason
    stop.set()
    await asyncio.wait_for(task, 5)


class _Looked(Health):
    """Health that counts how often the probe loop asked it for the writer's failure (its ticks)."""

    def __init__(self) -> None:
        super().__init__()
        self.looks = 0

    def failure(self, part: str) -> Any:
        self.looks += 1
        return super().failure(part)


async def test_a_healthy_writer_is_not_probed() -> None:
    writer, stop, health = _Refusing(), asyncio.Event(), _Looked()
    task = asyncio.create_task(hookwriter.probe_loop(writer, health, stop, interval_s=0.01))  # type: ignore[arg-type]
    await until("ten ticks of the probe loop", lambda: health.looks >= 10)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert writer.calls == 0


def test_the_probe_commits_a_write_and_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    conn = connect(tmp_path / "p.db")
    migrate(conn)
    before = conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall()
    changes = conn.total_changes()
    hookwriter.probe(conn)
    assert conn.total_changes() == changes + 2  # one row in and out, committed
    assert conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall() == before
    conn.close()
