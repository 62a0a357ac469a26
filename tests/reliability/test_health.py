"""``/api/health`` tells the truth (SPEC §10): 503 with the reason when the database fails its quick
check at start, refuses writes, or the writer or tailer is stalled; 200 again once that is over.

Regression: with the database corrupted or made read-only, health said "ok" while
hooks got 500.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from aiohttp.test_utils import TestClient

from ingestd.core.ledger import PINS
from ingestd.core.records import NewLogRow
from ingestd.daemon import checks, hookwriter
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import WRITER, assemble
from ingestd.errors import BusyError
from ingestd.http.health import Health
from ingestd.http.hooks import HookConfig
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.writer import apply_batch
from tests.hookclient import JSON_HEADERS
from tests.reliability.support import q

Client = TestClient[Any, Any]
MakeClient = Callable[..., Awaitable[Client]]
HOOK = orjson.dumps({"hook_event_name": "Stop", "session_id": "s-health"})


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "h.db"


@pytest.fixture
def make_client(aiohttp_client: Any, db: Path) -> MakeClient:
    async def make(**kw: Any) -> Client:
        app_kw = {k: kw.pop(k) for k in ("apply", "ingest", "changes") if k in kw}
        cfg = ServeConfig(**{"db_path": db, "tail": False, "schedule": False, "watchdog_interval_s": 3600, **kw})
        client: Client = await aiohttp_client(assemble(cfg, **app_kw), headers=JSON_HEADERS)
        return client

    return make


async def health_is(client: Client, status: int, timeout_s: float = 10.0) -> dict[str, Any]:
    """Poll ``/api/health`` until it answers ``status`` (background checks take a moment)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        resp = await client.get("/api/health")
        doc: dict[str, Any] = await resp.json()
        if resp.status == status:
            return doc
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"health stayed {resp.status}: {doc}")
        await asyncio.sleep(0.02)


def corrupt_an_index(db: Path) -> None:
    """Fill the log, then overwrite the root page of one of its indexes with garbage."""
    conn = connect(db)
    migrate(conn)
    rows = [
        NewLogRow(f"h:k{i}", "hook", "Stop", b'{"hook_event_name":"Stop","session_id":"s"}',
                  "2026-01-01T00:00:00.000Z", "s", "hook")
        for i in range(50)
    ]  # fmt: skip
    apply_batch(conn, rows)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    (root,) = conn.execute(
        "SELECT rootpage FROM sqlite_master WHERE type = 'index' AND tbl_name = 'log_rows' ORDER BY name LIMIT 1"
    ).fetchall()[0]
    conn.close()
    with db.open("r+b") as fh:
        fh.seek((root - 1) * page_size)
        fh.write(b"\x0d\xff\xff\xff" * (page_size // 4))


async def test_corrupt_database_is_503_naming_quick_check(make_client: MakeClient, db: Path) -> None:
    corrupt_an_index(db)
    client = await make_client()
    doc = await health_is(client, 503)
    assert doc["error"]["code"] == "unhealthy"
    assert doc["error"]["message"].startswith("quick_check: PRAGMA quick_check failed at start: ")


async def test_sound_database_is_200_after_its_quick_check(make_client: MakeClient, db: Path) -> None:
    client = await make_client()
    assert (await client.post("/hooks", data=HOOK)).status == 200
    doc = await health_is(client, 200)
    assert doc["status"] == "ok" and doc["schema_version"] == PINS[-1].id  # every migration applied


def _query_only_on(conn: apsw.Connection) -> None:  # module-level: the writer may be a process
    conn.execute("PRAGMA query_only=1")


def _query_only_off(conn: apsw.Connection) -> None:
    conn.execute("PRAGMA query_only=0")


async def test_database_refusing_writes_is_503_until_a_write_succeeds(make_client: MakeClient, db: Path) -> None:
    client = await make_client()
    writer = client.server.app[WRITER]
    await writer.call(_query_only_on)  # a real SQLITE_READONLY on the next write
    resp = await client.post("/hooks", data=HOOK)
    assert resp.status == 500
    doc = await health_is(client, 503, timeout_s=0.5)
    assert "writer failing for" in doc["error"]["message"]
    assert "the last write failed: attempt to write a readonly database" in doc["error"]["message"]
    await writer.call(_query_only_off)
    assert (await client.post("/hooks", data=HOOK)).status == 200
    await health_is(client, 200, timeout_s=0.5)
    assert q(db, "SELECT count(*) FROM events_raw") == [(1,)]


async def test_a_stuck_commit_is_503_writer_stalled_then_200(make_client: MakeClient, db: Path) -> None:
    release = threading.Event()

    def stuck(conn: apsw.Connection, rows: Sequence[NewLogRow]) -> int:
        release.wait(30)  # a disk that stopped answering, a lock held elsewhere
        return hookwriter.store_rows(conn, rows)

    client = await make_client(apply=stuck, stall_after_s=0.2, hooks=HookConfig(hook_timeout_ms=20000))
    post = asyncio.ensure_future(client.post("/hooks", data=HOOK))
    doc = await health_is(client, 503)
    assert doc["error"]["message"].startswith("writer stalled: one unit of work has run for ")
    release.set()
    assert (await post).status == 200
    await health_is(client, 200)


async def test_a_failing_tailer_is_503_tailer_failing(make_client: MakeClient, tmp_path: Path) -> None:
    calls = 0

    async def failing(paths: Sequence[Path] | None) -> None:
        nonlocal calls
        calls += 1
        raise BusyError("database is locked")

    async def no_changes(roots: Sequence[Path], stop: asyncio.Event) -> Any:
        await stop.wait()
        if False:  # an async generator that yields nothing
            yield set()

    client = await make_client(ingest=failing, changes=no_changes, tail=True, projects=(tmp_path,))
    doc = await health_is(client, 503)
    assert "tailer failing for" in doc["error"]["message"] and "database is locked" in doc["error"]["message"]
    assert calls >= 1


def test_health_state_rules() -> None:
    """Health's rules: stalled only past the threshold, progress restarts the clock, failing since the first
    failure in a row, named problems until cleared."""
    now = [100.0]
    h = Health(stall_after_s=5, clock=lambda: now[0])
    h.busy("writer")
    now[0] += 5
    assert h.problems() == []  # not more than the threshold yet
    now[0] += 0.5
    assert h.problems() == ["writer stalled: one unit of work has run for 5.5 s"]
    h.progress("writer")  # a commit in a long pass restarts the clock
    assert h.problems() == []
    h.failed("tailer", "disk I/O error")
    now[0] += 2
    h.failed("tailer", "disk full")  # failing since the first failure in a row
    assert h.problems() == ["tailer failing for 2.0 s: disk full"]
    h.ok("tailer")
    h.set_problem("quick_check", "bad page")
    assert h.problems() == ["quick_check: bad page"]
    h.clear_problem("quick_check")
    h.ok("writer")
    assert h.problems() == []


def test_a_commit_on_the_tailers_connection_counts_as_progress(tmp_path: Path) -> None:
    # a long catch-up commits batch after batch: that is work going on, not a stall
    now = [0.0]
    h = Health(stall_after_s=5, clock=lambda: now[0])
    conn = checks.report_commits(connect(tmp_path / "t.db"), h, "tailer")
    h.busy("tailer")
    now[0] = 6.0
    assert h.problems() == ["tailer stalled: one unit of work has run for 6.0 s"]
    conn.execute("CREATE TABLE t(x)")  # autocommit: one commit
    assert h.problems() == []
    now[0] = 11.5
    assert h.problems() == ["tailer stalled: one unit of work has run for 5.5 s"]
    conn.close()


async def test_the_tailer_reports_its_retries_to_the_daemons_health(aiohttp_client: Any, db: Path) -> None:
    # one stall mechanism: the tailer's backoff reports to the app's Health, which mirrors the file
    from ingestd.daemon.ingestrun import IngestRunner
    from ingestd.daemon.root import TAILER, assemble
    from ingestd.http.api import HEALTH
    from ingestd.store import stall

    app = assemble(ServeConfig(db_path=db, tail=False, schedule=False, watchdog_interval_s=3600))
    await aiohttp_client(app)
    runner = app[TAILER]._ingest
    assert isinstance(runner, IngestRunner) and runner._tailing.backoff is not None
    runner._tailing.backoff.report.retrying("tailer", "database error: database is locked")
    assert app[HEALTH].stalls()[0]["component"] == "tailer"
    assert stall.read_mirror(db, 0.0)[0]["reason"] == "database error: database is locked"
    runner._tailing.backoff.report.retried("tailer")
    assert app[HEALTH].problems() == [] and not stall.mirror_path(db).exists()
