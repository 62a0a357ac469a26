"""What aiohttp refuses before any route runs (a header line over 8190 bytes, a broken request
line) is answered in the one JSON error shape, as every other error (``http.parseerrors``), and the
daemon serves through it.

Regression: an ``Idempotency-Key`` over 8 KiB got aiohttp's plain-text 400.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from pathlib import Path

import pytest
import structlog
from aiohttp import web

from ingestd.http import parseerrors
from ingestd.http.parseerrors import RefusalLog, json_errors
from tests.reliability.daemon import Daemon


async def _ok(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def _ask(raw: bytes) -> tuple[str, dict[str, object]]:
    app = web.Application()
    app.router.add_post("/hooks", _ok)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    assert runner.server is not None
    loop = asyncio.get_running_loop()
    server = await loop.create_server(json_errors(runner.server), "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(raw)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    finally:
        server.close()
        await runner.cleanup()
    _ASKED.append(answer)
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.decode().split("\r\n")[0], json.loads(body)


_ASKED: list[bytes] = []


@pytest.mark.parametrize(
    "raw",
    [
        b"POST /hooks HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + b"k" * 9000 + b"\r\nContent-Length: 2\r\n\r\n{}",
        b"NOT HTTP AT ALL\r\n\r\n",
    ],
)
async def test_aiohttps_own_400s_are_json(raw: bytes) -> None:
    status, doc = await _ask(raw)
    assert status.split(" ", 1)[1] == "400 Bad Request"  # HTTP/1.0 when the request line was not read
    assert doc["error"]["status"] == 400  # type: ignore[index]
    assert doc["error"]["code"] == "bad_request"  # type: ignore[index]


async def test_a_good_request_is_served_as_before() -> None:
    status, doc = await _ask(b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
    assert status.startswith("HTTP/1.1 200") and doc == {"ok": True}


@pytest.mark.timeout(60)
def test_the_daemon_serves_through_it(tmp_path: Path) -> None:
    # review: this only grepped main._serve_on's source for the factory line; now the real serve
    # answers an Idempotency-Key over 8 KiB, through its connection guard, in the JSON shape
    d = Daemon.in_dir(tmp_path)
    d.start()
    try:
        raw = b"POST /hooks HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + b"k" * 9000 + b"\r\nContent-Length: 2\r\n\r\n{}"
        with socket.create_connection(("127.0.0.1", d.port), timeout=10) as s:
            s.sendall(raw)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
    finally:
        assert d.stop() == 0
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0].split(b" ", 1)[1] == b"400 Bad Request", answer[:500]
    assert b"application/json" in head.lower()
    doc = json.loads(body)
    assert doc["error"]["status"] == 400 and doc["error"]["code"] == "bad_request"


TOKEN = "s3cr3t-t0ken-b4"
HOSTILE = [
    b"POST /hooks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() + b" \x01\r\n\r\n",
    b"POST /hooks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() + b"x" * 9000 + b"\r\n\r\n",
    b"GET /" + TOKEN.encode() + b" \x01HTTP/1.1\r\n\r\n",
]


@pytest.mark.parametrize("raw", HOSTILE)
async def test_a_refused_request_never_echoes_or_logs_its_bytes(
    raw: bytes, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the token came back in the 400 body and in an error-level traceback."""
    monkeypatch.setattr(parseerrors, "REFUSALS", RefusalLog())
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as logs:
        status, _doc = await _ask(raw)
    assert " 400 " in status
    assert TOKEN not in _ASKED[-1].decode("latin-1")
    out, err = capsys.readouterr()
    assert TOKEN not in out + err + caplog.text + repr(logs)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert [(e["event"], e["log_level"]) for e in logs] == [("http_request_refused", "info")]
    assert logs[0]["kind"] == ("invalid_header", "line_too_long", "bad_request_line")[HOSTILE.index(raw)]


async def test_the_size_hint_is_given_only_for_a_line_too_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parseerrors, "REFUSALS", RefusalLog())
    _, long_doc = await _ask(HOSTILE[1])
    _, bad_doc = await _ask(HOSTILE[0])
    assert "8190 bytes" in long_doc["error"]["message"]  # type: ignore[index]
    assert "8190" not in bad_doc["error"]["message"]  # type: ignore[index]


def test_refusals_are_rate_limited_and_counted() -> None:
    now = [0.0]
    refusals = RefusalLog(every_s=10.0, clock=lambda: now[0])
    with structlog.testing.capture_logs() as logs:
        for i in range(50):
            now[0] = i * 0.5  # 25 s of a client sending garbage twice a second
            refusals.note("invalid_header", "127.0.0.1")
    assert refusals.total == 50
    assert len(logs) == 3  # at 0 s, 10 s, 20 s
    assert logs[1]["not_logged"] == 19 and logs[2]["refused_total"] == 41
