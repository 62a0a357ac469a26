"""A web page can neither write to nor read from the daemon (SPEC §10), and any token bytes give 401.

The attacks, each with its exact answer: a browser's "simple" cross-origin POSTs
(``text/plain``, form, multipart; ``Origin: null``), a DNS-rebinding page's foreign ``Host`` on
the hook endpoint and on every read route, and ``\\xff`` in either token header. Nothing an
attack sends is stored. Claude Code's real hook requests (the corpus's bodies, its headers) and
``ingestd.forward`` still get 200.
"""

from __future__ import annotations

import asyncio
import io
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from ingestd import forward
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import assemble
from ingestd.http import guard
from tests.hookclient import JSON_HEADERS, corpus_hook_bodies, first_of_each_event
from tests.reliability.support import SID, q

Client = TestClient[Any, Any]
MakeClient = Callable[..., Awaitable[Client]]
EVIL = "https://evil.example"
FORGED = orjson.dumps(
    {"hook_event_name": "UserPromptSubmit", "session_id": SID, "session_title": "PWNED", "prompt": "x"}
)
READ_ROUTES = [
    "/api/health",
    "/api/sessions",
    f"/api/sessions/{SID}/tree",
    "/api/cost",
    "/api/status",
    "/api/openapi.json",
]
TOKEN = "s3cret-token"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "w.db"


@pytest.fixture
def make_client(aiohttp_client: Any, db: Path) -> MakeClient:
    async def make(**kw: Any) -> Client:
        cfg = ServeConfig(db_path=db, tail=False, schedule=False, watchdog_interval_s=3600, **kw)
        client: Client = await aiohttp_client(assemble(cfg))
        return client

    return make


def stored(db: Path) -> int:
    return int(q(db, "SELECT count(*) FROM events_raw WHERE source = 'hook'")[0][0])


async def expect(resp: Any, status: int, code: str) -> dict[str, Any]:
    assert resp.status == status, await resp.text()
    doc: dict[str, Any] = await resp.json()
    assert doc == {"error": {"status": status, "code": code, "message": doc["error"]["message"]}}
    assert not [h for h in resp.headers if h.lower().startswith("access-control-")]
    return doc


# -- cross-origin writes ---------------------------------------------------------------------


SIMPLE_TYPES = ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"]


@pytest.mark.parametrize("content_type", SIMPLE_TYPES)
async def test_simple_cross_origin_post_is_refused_403_and_nothing_stored(
    make_client: MakeClient, db: Path, content_type: str
) -> None:
    client = await make_client()
    resp = await client.post("/hooks", data=FORGED, headers={"Origin": EVIL, "Content-Type": content_type})
    doc = await expect(resp, 403, "forbidden_origin")
    assert "allowed_origins" in doc["error"]["message"]
    assert stored(db) == 0
    assert q(db, "SELECT count(*) FROM sessions WHERE title = 'PWNED'") == [(0,)]


@pytest.mark.parametrize("content_type", SIMPLE_TYPES)
async def test_simple_content_types_without_origin_are_415(
    make_client: MakeClient, db: Path, content_type: str
) -> None:
    # a page's request whose Origin was stripped (or a non-browser client) still cannot send these
    client = await make_client()
    await expect(
        await client.post("/hooks", data=FORGED, headers={"Content-Type": content_type}), 415, "unsupported_media_type"
    )
    assert stored(db) == 0


async def test_no_content_type_at_all_is_415(make_client: MakeClient, db: Path) -> None:
    # fetch(url, {mode: "no-cors", body: new Blob([json])}) sends no Content-Type at all
    client = await make_client()
    resp = await client.post("/hooks", data=io.BytesIO(FORGED), skip_auto_headers=["Content-Type"])
    await expect(resp, 415, "unsupported_media_type")
    assert stored(db) == 0


async def test_origin_null_is_refused_403(make_client: MakeClient, db: Path) -> None:
    # sandboxed iframes and file: pages send "Origin: null"
    client = await make_client()
    resp = await client.post("/hooks", data=FORGED, headers={"Origin": "null", "Content-Type": "text/plain"})
    await expect(resp, 403, "forbidden_origin")
    resp = await client.post("/hooks", data=FORGED, headers={"Origin": "null", **JSON_HEADERS})
    await expect(resp, 403, "forbidden_origin")
    assert stored(db) == 0


async def test_foreign_origin_is_refused_on_every_read_route(make_client: MakeClient) -> None:
    client = await make_client()
    for route in READ_ROUTES:
        await expect(await client.get(route, headers={"Origin": EVIL}), 403, "forbidden_origin")


async def test_the_daemons_own_origins_and_allowlisted_ones_pass(make_client: MakeClient, db: Path) -> None:
    client = await make_client(allowed_origins=("http://localhost:3000",))
    port = client.port
    for origin in (
        f"http://127.0.0.1:{port}",
        f"http://localhost:{port}",
        f"http://[::1]:{port}",
        "http://localhost:3000",
    ):
        resp = await client.post("/hooks", data=orjson.dumps({"hook_event_name": "Stop", "session_id": "s"}),
                                 headers={"Origin": origin, **JSON_HEADERS})  # fmt: skip
        assert resp.status == 200, (origin, await resp.text())
        assert (await client.get("/api/health", headers={"Origin": origin})).status == 200
    # the same host on another port, or https, is another origin
    for origin in (f"http://127.0.0.1:{port + 1}", f"https://127.0.0.1:{port}", "http://localhost:3001"):
        await expect(await client.get("/api/health", headers={"Origin": origin}), 403, "forbidden_origin")
    assert stored(db) == 4


async def test_no_cors_headers_even_on_a_preflight(make_client: MakeClient) -> None:
    client = await make_client()
    resp = await client.options(
        "/hooks",
        headers={
            "Origin": EVIL,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert resp.status == 403
    assert not [h for h in resp.headers if h.lower().startswith("access-control-")]


# -- DNS rebinding ---------------------------------------------------------------------------


async def test_foreign_host_is_refused_421_on_hooks_and_every_read_route(make_client: MakeClient, db: Path) -> None:
    client = await make_client()
    host = {"Host": "rebind.evil.example:7391"}
    doc = await expect(
        await client.post("/hooks", data=FORGED, headers={**host, **JSON_HEADERS}), 421, "misdirected_host"
    )
    assert "allowed_hosts" in doc["error"]["message"]
    for route in READ_ROUTES:
        resp = await client.get(route, headers=host)
        body = await resp.read()
        await expect(resp, 421, "misdirected_host")
        assert SID.encode() not in body
    assert stored(db) == 0


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1.nip.io", "localhost.evil.example", "127.0.0.2", "evil.example:80@127.0.0.1", "", "[::1", "localhost:x"],
)
async def test_lookalike_and_malformed_hosts_are_refused(make_client: MakeClient, host: str) -> None:
    client = await make_client()
    await expect(await client.get("/api/health", headers={"Host": host}), 421, "misdirected_host")


async def test_loopback_names_and_configured_names_pass(make_client: MakeClient) -> None:
    client = await make_client(allowed_hosts=("ingestd.lan",))
    for host in ("127.0.0.1:7391", "localhost", "LOCALHOST:1", "[::1]:7391", "ingestd.lan:7391"):
        assert (await client.get("/api/health", headers={"Host": host})).status == 200, host


async def test_the_host_answers_are_remembered_per_header_and_the_memory_is_bounded(make_client: MakeClient) -> None:
    """The guard remembers host_ok per Host header (the hot path of every hook): a refused name
    stays refused, a good one stays good, and past ``HOST_CACHE`` names every answer is still right."""
    client = await make_client()
    for _ in range(2):
        await expect(await client.get("/api/health", headers={"Host": "rebind.evil.example"}), 421, "misdirected_host")
        assert (await client.get("/api/health", headers={"Host": "127.0.0.1:7391"})).status == 200
    for i in range(guard.HOST_CACHE + 6):
        await expect(await client.get("/api/health", headers={"Host": f"evil{i}.example"}), 421, "misdirected_host")
    assert (await client.get("/api/health", headers={"Host": "localhost:9"})).status == 200
    await expect(await client.get("/api/health", headers={"Host": "evil0.example"}), 421, "misdirected_host")
    await expect(await client.get("/api/health", headers={"Host": "evil99.example"}), 421, "misdirected_host")


def test_policy_parsing_is_exact() -> None:
    """Allowed hosts and origins are normalised exactly (case, brackets, default ports); an origin without a
    scheme is refused."""
    p = guard.make_policy("0.0.0.0", 7391, ["Box.LAN", "[fe80::1]"], ["HTTP://Tool.example:80/"])
    assert p.hosts == {"127.0.0.1", "::1", "localhost", "box.lan", "fe80::1"}
    assert p.origins == {"http://tool.example"}
    assert guard.make_policy("192.0.2.7", 1, [], []).hosts >= {"192.0.2.7"}
    assert guard.origin_ok(p, "http://tool.example", 7391)
    assert not guard.origin_ok(p, "http://tool.example:8080", 7391)
    assert guard.origin_ok(p, "http://box.lan:7391", 7391)
    # through a forwarded port the page and the API share the browser's host:port
    assert guard.origin_ok(p, "http://localhost:9999", 7391, "localhost:9999")
    assert not guard.origin_ok(p, "http://localhost:9999", 7391, "localhost:7391")
    assert not guard.origin_ok(p, "https://localhost:9999", 7391, "localhost:9999")
    with pytest.raises(guard.ConfigError, match="allowed_origins"):
        guard.make_policy("127.0.0.1", 1, [], ["tool.example"])


# -- token bytes -----------------------------------------------------------------------------


def raw_request(port: int, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """One request written byte for byte (clients refuse to send these headers); the status and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


@pytest.mark.parametrize(
    "header",
    [
        b"Authorization: Bearer \xff",
        b"X-Ingestd-Token: \xff",
        b"Authorization: Bearer s3cret-token\xff",
        b"X-Ingestd-Token: \xc3\x28\x80",
    ],
)
async def test_any_bytes_in_a_token_header_are_401_never_500(
    make_client: MakeClient, db: Path, header: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    client = await make_client(token=TOKEN)
    body = orjson.dumps({"hook_event_name": "Stop", "session_id": "s"})
    head = b"POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + header + b"\r\n"
    status, text = await asyncio.get_running_loop().run_in_executor(None, raw_request, client.port, head, body)
    assert status == 401, text
    assert orjson.loads(text)["error"]["code"] == "unauthorized"
    ok = b"POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    ok += b"X-Ingestd-Token: s3cret-token\r\n"
    assert (await asyncio.get_running_loop().run_in_executor(None, raw_request, client.port, ok, body))[0] == 200
    assert stored(db) == 1
    assert "Traceback" not in caplog.text


# -- real clients keep working ---------------------------------------------------------------


async def test_real_claude_code_hook_requests_from_the_corpus_get_200(
    make_client: MakeClient, db: Path, corpus: Path
) -> None:
    client = await make_client()
    bodies = corpus_hook_bodies(corpus)
    assert len(bodies) > 30
    # Claude Code's http hook: POST with these headers, Host 127.0.0.1:<port>, no Origin
    headers = {
        **JSON_HEADERS,
        "User-Agent": "claude-cli/2.1.119 (external, cli)",
        "Accept": "application/json, text/plain, */*",
    }
    for name, body in bodies:
        resp = await client.post("/hooks", data=body, headers=headers)
        assert resp.status == 200, (name, await resp.text())
        assert await resp.read() == b""
    # every delivery is stored once, except a redelivery of one tool or subagent event (SPEC's
    # idempotency key: session, tool_use_id or agent_id, event name), which is stored once
    rows = [
        bytes(p)
        for (p,) in q(db, "SELECT payload_bytes(codec, payload) FROM events_raw WHERE source = 'hook' ORDER BY id")
    ]
    assert sorted(rows) == sorted(first_of_each_event(b for _, b in bodies))


async def test_the_forwarder_gets_its_bodies_stored(
    make_client: MakeClient, db: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = await make_client()
    (name, body), *_ = [b for b in corpus_hook_bodies(corpus) if b[0].endswith("/SessionStart")]

    def run() -> int:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(body)))
        return forward.main(["--url", f"http://127.0.0.1:{client.port}/hooks", "--timeout-s", "5"])

    assert await asyncio.get_running_loop().run_in_executor(None, run) == 0
    assert [
        bytes(p) for (p,) in q(db, "SELECT payload_bytes(codec, payload) FROM events_raw WHERE source = 'hook'")
    ] == [body], name
