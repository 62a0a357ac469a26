"""POST /statusline through the daemon's own app, writer and database, and the client Claude Code
runs (``ingestd.statusclient``) against it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from ingestd import statusclient
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import assemble
from ingestd.store.connection import connect
from tests.hookclient import JSON_HEADERS
from tests.statusline.documented import REAL, SESSION, documented
from tests.support import free_port

Client = TestClient[Any, Any]
CLIENT = Path(statusclient.__file__).resolve()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ingestd.db"


@pytest.fixture
def make_client(aiohttp_client: Any, db: Path) -> Callable[[], Awaitable[Client]]:
    async def make() -> Client:
        cfg = ServeConfig(db_path=db, tail=False, schedule=False, watchdog_interval_s=3600)
        client: Client = await aiohttp_client(assemble(cfg), headers=JSON_HEADERS)
        return client

    return make


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = connect(db, readonly=True)
    try:
        return [tuple(r) for r in conn.execute(sql)]
    finally:
        conn.close()


async def test_a_snapshot_is_logged_once_and_answered_with_the_line(make_client: Any, db: Path) -> None:
    client = await make_client()
    body = orjson.dumps(documented(time.time()))
    resp = await client.post("/statusline?color=0", data=body)
    line = await resp.text()
    assert resp.status == 200 and resp.content_type == "text/plain"
    assert line.startswith("Opus 4.1 · session $0.00 (CC $1.23) · today $0.00 · 5h 42% ↻") and "7d 13% ↻" in line
    assert line.endswith("ctx 25%") and "\n" not in line and "\x1b" not in line
    again = await client.post("/statusline?color=0", data=body)
    assert again.status == 200
    logged = rows(db, "SELECT source, event_type, session_id, origin FROM events_raw")
    assert logged == [("statusline", "snapshot", SESSION, "statusline")]
    samples = rows(db, "SELECT session_id, five_hour_pct, seven_day_pct, cc_cost_usd FROM rate_limit_samples")
    assert samples == [(SESSION, 42.5, 13.0, 1.2345)]


async def test_every_real_input_is_logged_and_answered(make_client: Any, db: Path) -> None:
    client = await make_client()
    for path in REAL:
        resp = await client.post("/statusline", data=path.read_bytes())
        assert resp.status == 200 and (await resp.text()).startswith("Sonnet 4.5")
    distinct = {orjson.dumps(orjson.loads(p.read_bytes())["context_window"]) for p in REAL}
    assert len(rows(db, "SELECT 1 FROM rate_limit_samples")) >= len(distinct)


@pytest.mark.parametrize("body", [b"{broken", b"[]", b'{"model": {}}'])
async def test_an_input_that_is_no_snapshot_gets_a_line_and_stores_nothing(
    make_client: Any, db: Path, body: bytes
) -> None:
    client = await make_client()
    resp = await client.post("/statusline?color=0", data=body)
    assert resp.status == 200 and (await resp.text()).startswith("ingestd: ")
    assert rows(db, "SELECT count(*) FROM events_raw WHERE source = 'statusline'") == [(0,)]


async def test_width_and_fields(make_client: Any) -> None:
    client = await make_client()
    body = orjson.dumps(documented(time.time()))
    narrow = await (await client.post("/statusline?color=0&columns=30", data=body)).text()
    assert len(narrow) <= 30 and narrow == "Opus 4.1"
    only = await (await client.post("/statusline?color=0&fields=limits,model", data=body)).text()
    assert only.startswith("5h 42% ↻") and only.endswith("Opus 4.1")
    colored = await (await client.post("/statusline", data=body)).text()
    assert "\x1b[" in colored


async def test_a_browser_form_post_is_refused(make_client: Any, db: Path) -> None:
    client = await make_client()
    resp = await client.post("/statusline", data=b"{}", headers={"Content-Type": "text/plain"})
    assert resp.status == 415


def run_client(url: str, body: bytes, **env: str) -> subprocess.CompletedProcess[bytes]:
    """The client as Claude Code runs it: by path, isolated, without site."""
    argv = [sys.executable, "-I", "-S", str(CLIENT), "--url", url]
    return subprocess.run(argv, input=body, capture_output=True, env={"PATH": "/usr/bin", **env}, timeout=30)


async def test_the_client_prints_the_daemons_line(make_client: Any, db: Path) -> None:
    client = await make_client()
    url = str(client.make_url("/statusline"))
    body = orjson.dumps(documented(time.time()))
    done = await asyncio.get_running_loop().run_in_executor(None, lambda: run_client(url, body, NO_COLOR="1"))
    out = done.stdout.decode()
    assert done.returncode == 0 and done.stderr == b""
    assert out.startswith("Opus 4.1 · session") and out.endswith("ctx 25%\n") and "\x1b" not in out
    assert rows(db, "SELECT count(*) FROM rate_limit_samples") == [(1,)]


@pytest.mark.parametrize("body", [orjson.dumps(documented(0)), b"{broken", b""])
def test_without_the_daemon_the_client_prints_a_fallback_and_exits_0(body: bytes) -> None:
    done = run_client(f"http://127.0.0.1:{free_port()}/statusline", body)
    out = done.stdout.decode()
    assert done.returncode == 0 and done.stderr == b"" and out.startswith("ingestd off") and out.count("\n") == 1
    if body.startswith(b'{"'):
        assert out == "ingestd off · Opus 4.1 · CC $1.23\n"


def test_the_client_never_passes_control_characters_on() -> None:
    assert statusclient.clean("a\x1b[31mb\x1b[0m\x1b]0;title\x07c\rd\ne", None) == "a\x1b[31mb\x1b[0m]0;titlecd\x1b[0m"
    assert statusclient.clean("\x1b[31mabcdef", 3, color=False) == "abc"


async def test_logged_snapshots_replay_to_the_same_samples(make_client: Any, db: Path) -> None:
    from ingestd.projection.replay import replay

    client = await make_client()
    now = time.time()
    for i, doc in enumerate([documented(now), documented(now, cost={"total_cost_usd": 3.0})]):
        assert (await client.post("/statusline", data=orjson.dumps(doc))).status == 200, i
    result = await asyncio.get_running_loop().run_in_executor(None, lambda: replay(db, parallel_min_rows=10**9))
    assert result.comparison.ok, result.comparison.differences
    assert rows(db, "SELECT count(*) FROM rate_limit_samples") == [(2,)]


@pytest.mark.parametrize("value", ["1e400", "-1e400", "-3", "250", "1" + "0" * 400, '"50"'])
async def test_a_context_share_or_an_estimate_that_is_no_number_in_range_shows_a_question_mark(
    make_client: Any, value: str
) -> None:
    """A percentage past 0-100 and a cost that is negative or not finite say nothing true; the line
    marks them, as it marks an unsound limits window."""
    client = await make_client()
    doc = documented(time.time())
    body = orjson.dumps(doc).replace(b'"used_percentage":25', b'"used_percentage":' + value.encode())
    body = body.replace(b'"total_cost_usd":1.2345', b'"total_cost_usd":' + value.encode())
    assert value.encode() in body
    resp = await client.post("/statusline", data=body, params={"color": "0"})
    line = await resp.text()
    assert resp.status == 200 and "ctx ?" in line, line
    assert ("(CC $250.00)" if value == "250" else "(CC ?)") in line, line  # 250 dollars is an amount
    assert "inf" not in line.lower() and "$-" not in line, line
    fallback = statusclient.fallback(body)
    if value in ("1e400", "-1e400", "-3"):
        assert fallback.endswith("CC ?"), fallback
