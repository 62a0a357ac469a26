"""The live view's server side: the page's headers and assets, and the change feed over ``/api/live``."""

from __future__ import annotations

import asyncio
import re
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from yarl import URL

from ingestd.core import hookkeys
from ingestd.core.hookkeys import HookEvent
from ingestd.http.hooks import hook_row
from ingestd.http.live import FEED, add_live_routes
from ingestd.http.web import ASSETS, CSP, STATIC_DIR, add_page_routes
from ingestd.store.connection import connect
from ingestd.store.writer import apply_batch
from tests.support import until

SID = "5e551011-0000-4000-8000-000000000001"
OTHER = "5e551011-0000-4000-8000-000000000002"


def hook(sid: str, n: int) -> Any:
    body = orjson.dumps({"hook_event_name": "UserPromptSubmit", "session_id": sid, "prompt": f"p{n}"})
    event = hookkeys.parse_body(body)
    assert isinstance(event, HookEvent)
    received = time.time_ns()
    return hook_row(event, body, hookkeys.receipt_key(received, "test", n), received)


def write(db_path: Path, *rows: Any) -> None:
    conn = connect(db_path)
    try:
        apply_batch(conn, list(rows))
    finally:
        conn.close()


async def next_event(resp: Any, timeout_s: float = 5.0) -> tuple[str, dict[str, Any]]:
    """The next named event of an SSE response (comments skipped)."""
    while True:
        block = await asyncio.wait_for(resp.content.readuntil(b"\n\n"), timeout_s)
        fields = dict(
            line.split(": ", 1) for line in block.decode().strip().split("\n") if ": " in line and line[0] != ":"
        )
        if "event" in fields:
            return fields["event"], orjson.loads(fields["data"])


# ---- the page -------------------------------------------------------------------------------------------


@pytest.fixture
async def page(aiohttp_client: Any) -> Any:
    app = web.Application()
    add_page_routes(app)
    return await aiohttp_client(app)


@pytest.mark.parametrize("path", ["/", *(f"/static/{n}" for n in ASSETS if n != "index.html")])
async def test_every_page_file_has_the_policy_headers(page: Any, path: str) -> None:
    resp = await page.get(path)
    assert resp.status == 200
    assert resp.headers["Content-Security-Policy"] == CSP
    assert "script-src 'self'" in CSP and "'unsafe-inline'" not in CSP and "'unsafe-eval'" not in CSP
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.headers["X-Frame-Options"] == "DENY"
    assert "Access-Control-Allow-Origin" not in resp.headers
    etag = resp.headers["ETag"]
    again = await page.get(path, headers={"If-None-Match": etag})
    assert again.status == 304


@pytest.mark.parametrize(
    "path", ["/static/", "/static/../web.py", "/static/%2e%2e/web.py", "/static/missing.js", "/index.html"]
)
async def test_only_the_listed_assets_are_served(page: Any, path: str) -> None:
    # encoded=True: the client would otherwise collapse `..` and ask for /web.py, a route that
    # does not exist, and the traversal cases could not fail
    resp = await page.get(URL(path, encoded=True))
    assert resp.status == 404


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script_text = ""
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.script_text += data


def test_the_page_has_no_inline_script_style_or_handler() -> None:
    parser = _Tags()
    parser.feed((STATIC_DIR / "index.html").read_text(encoding="utf-8"))
    scripts = [a for t, a in parser.tags if t == "script"]
    assert scripts == [{"type": "module", "src": "/static/app.js"}]
    assert parser.script_text.strip() == ""
    for tag, attrs in parser.tags:
        assert "style" not in attrs, tag
        assert not [a for a in attrs if a.startswith("on")], tag
        for a in ("src", "href"):
            value = attrs.get(a)
            assert value is None or value.startswith(("/static/", "#")), (tag, value)  # nothing from elsewhere


@pytest.mark.parametrize("name", [n for n in ASSETS if n.endswith(".js")])
def test_the_scripts_never_build_markup_from_text(name: str) -> None:
    # The DOM is built with createElement/text nodes only (the `h` helper); these sinks would parse text as HTML.
    source = (STATIC_DIR / name).read_text(encoding="utf-8")
    assert "http://" not in source and "https://" not in source  # nothing from elsewhere
    code = re.sub(r"//[^\n]*", "", source)
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "srcdoc"):
        assert sink not in code, sink
    for target in re.findall(r'from "([^"]+)"', code):  # modules import only the shipped files
        assert target.startswith("./") and target[2:] in ASSETS, target


def test_the_assets_ship_as_package_data() -> None:
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"http/static/*"' in pyproject
    assert {p.name for p in STATIC_DIR.iterdir()} == set(ASSETS)


# ---- the change feed ------------------------------------------------------------------------------------


@pytest.fixture
async def live(aiohttp_client: Any, db_path: Path) -> Any:
    app = web.Application()
    add_live_routes(app, db_path, interval_s=0.02, max_streams=2)
    client = await aiohttp_client(app)
    return client


async def test_a_commit_is_pushed_with_its_sessions(live: Any, db_path: Path) -> None:
    resp = await live.get("/api/live")
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "text/event-stream"
    name, hello = await next_event(resp)
    assert name == "hello" and hello["log_id"] == 0 and hello["boot"] > 0
    feed = live.app[FEED]
    await until("the feed's first reading", lambda: feed.polls >= 1)
    write(db_path, hook(SID, 1))
    name, change = await next_event(resp)
    assert (name, change) == ("change", {"log_id": 1, "sessions": [SID]})
    write(db_path, hook(OTHER, 2), hook(SID, 3))
    name, change = await next_event(resp)
    assert (name, change) == ("change", {"log_id": 3, "sessions": sorted([SID, OTHER])})
    resp.close()


async def test_a_commit_without_log_rows_means_everything(live: Any, db_path: Path) -> None:
    resp = await live.get("/api/live")
    await next_event(resp)
    feed = live.app[FEED]
    await until("the feed's first reading", lambda: feed.polls >= 1)
    conn = connect(db_path)
    try:
        conn.execute(
            "INSERT INTO model_pricing (model, bucket, effective_from, usd_per_mtok, source)"
            " VALUES ('claude-live-1', 'input', '2020-01-01T00:00:00.000Z', '1', 'test')"
        )
    finally:
        conn.close()
    name, change = await next_event(resp)
    assert name == "change" and change["sessions"] is None  # prices changed: every number may have
    resp.close()


async def test_a_slow_reader_gets_one_coalesced_change(live: Any, db_path: Path) -> None:
    feed = live.app[FEED]
    resp = await live.get("/api/live")
    await next_event(resp)
    for n in range(5):
        feed.broadcast(n + 1, {f"s{n}"})
    name, change = await next_event(resp)
    assert name == "change"
    assert change == {"log_id": 5, "sessions": ["s0", "s1", "s2", "s3", "s4"]}
    feed.broadcast(6, {"s9"})
    feed.broadcast(7, None)
    name, change = await next_event(resp)
    assert name == "change"
    assert change == {"log_id": 7, "sessions": None}
    resp.close()


async def _ended(resp: Any) -> bool:
    """The server ended the stream (EOF within 5 s)."""
    async with asyncio.timeout(5):
        while await resp.content.read(65536):
            pass
    return True


async def test_a_stream_past_the_cap_evicts_the_oldest_never_refused(live: Any) -> None:
    feed = live.app[FEED]
    first = await live.get("/api/live")
    second = await live.get("/api/live")
    await next_event(first)
    await next_event(second)
    third = await live.get("/api/live")
    assert third.status == 200
    assert (await next_event(third))[0] == "hello"
    assert await _ended(first)  # the oldest went; the newest page always gets its feed
    assert len(feed.subscribers) == 2
    second.close()
    third.close()


async def test_one_client_cannot_hold_every_stream(aiohttp_server: Any, db_path: Path) -> None:
    app = web.Application()
    add_live_routes(app, db_path, interval_s=0.02, max_streams=4, max_per_client=3)
    server = await aiohttp_server(app)
    url = f"http://127.0.0.1:{server.port}/api/live"
    hog = aiohttp.ClientSession()
    other = aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=("127.0.0.2", 0)))
    try:
        held = [await hog.get(url) for _ in range(4)]  # the fourth evicts the hog's own first
        for r in held[1:]:
            assert (await next_event(r))[0] == "hello"
        assert await _ended(held[0])
        mine = [await other.get(url) for _ in range(2)]
        for r in mine:
            assert (await next_event(r))[0] == "hello"
        assert await _ended(held[1])  # the cap was full at the second: the hog's oldest made room
        feed = app[FEED]
        assert sorted(s.client for s in feed.subscribers) == ["127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2"]
        for r in [*held, *mine]:
            r.close()
    finally:
        await hog.close()
        await other.close()


@pytest.mark.parametrize(
    ("site", "status"), [("cross-site", 403), ("same-site", 403), ("same-origin", 200), ("none", 200)]
)
async def test_a_navigation_from_another_site_gets_no_stream(live: Any, site: str, status: int) -> None:
    resp = await live.get("/api/live", headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate"})
    assert resp.status == status
    if status == 403:
        assert (await resp.json())["error"]["code"] == "cross_site"
        assert live.app[FEED].subscribers == set()
    resp.close()


async def test_shutdown_ends_open_streams_at_once(aiohttp_server: Any, aiohttp_client: Any, db_path: Path) -> None:
    app = web.Application()
    add_live_routes(app, db_path, interval_s=0.02)
    server = await aiohttp_server(app)
    client = await aiohttp_client(server)
    resp = await client.get("/api/live")
    await next_event(resp)
    started = time.monotonic()
    await server.close()
    assert await asyncio.wait_for(resp.content.read(), 5) == b""  # the stream ended
    assert time.monotonic() - started < 5
    assert app[FEED].subscribers == set()


async def test_an_unreadable_database_is_logged_once_and_the_feed_goes_on(aiohttp_client: Any, tmp_path: Path) -> None:
    from structlog.testing import capture_logs

    app = web.Application()
    feed = add_live_routes(app, tmp_path / "absent.db", interval_s=0.01)
    with capture_logs() as logs:
        client = await aiohttp_client(app)
        await until("five failed reads", lambda: feed.polls >= 5)
        resp = await client.get("/api/live")
        assert resp.status == 200  # the stream still opens; the page shows the read API's own errors
        await next_event(resp)
        resp.close()
    failures = [e for e in logs if e["event"] == "live_feed_read_failed"]
    assert len(failures) == 1
    assert feed.log_id == 0
