"""The app's one middleware (``ingestd.http.app._front``): every route, the hooks' included, passes
one layer that applies, in order, the Host rule (421), the Origin rule (403), the token (401), then
the handler, whose aiohttp errors (404, 405) come back in the one JSON error shape; the connection
guard sees the request start and finish whatever the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from ingestd.daemon import hookwriter
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import assemble
from ingestd.http.conns import BUSY, IDLE, ConnectionGuard, ConnLimits
from tests.hookclient import JSON_HEADERS

BODY = orjson.dumps({"hook_event_name": "Stop", "session_id": "s1"})


def _app(db: Path, **kw: Any) -> web.Application:
    cfg = ServeConfig(db_path=db, tail=False, schedule=False, watchdog_interval_s=3600, **kw)
    return assemble(cfg, apply=hookwriter.store_rows)


async def _code(resp: Any) -> tuple[int, str]:
    return resp.status, (await resp.json())["error"]["code"]


def test_one_middleware_layer(tmp_path: Path) -> None:
    """Every request goes through one middleware layer."""
    assert len(_app(tmp_path / "d.db").middlewares) == 1


async def test_refusals_keep_their_order(aiohttp_client: Any, tmp_path: Path) -> None:
    """A request failing several checks gets the first one's refusal: Host (421), Origin (403), token (401),
    route (404/405)."""
    client = await aiohttp_client(_app(tmp_path / "d.db", token="s3cret"), headers=JSON_HEADERS)
    evil = {"Origin": "http://evil.example"}
    # a foreign Host is refused before the Origin, the token and the route are looked at
    r = await client.post("/nowhere", data=BODY, headers={"Host": "rebind.evil.example", **evil})
    assert await _code(r) == (421, "misdirected_host")
    # then a foreign Origin, before the token
    assert await _code(await client.post("/hooks", data=BODY, headers=evil)) == (403, "forbidden_origin")
    # then the token, before the route (an unknown path without the token is 401, not 404)
    assert await _code(await client.get("/nowhere")) == (401, "unauthorized")
    auth = {"Authorization": "Bearer s3cret"}
    assert await _code(await client.get("/nowhere", headers=auth)) == (404, "not_found")
    r = await client.get("/hooks", headers=auth)
    assert await _code(r) == (405, "method_not_allowed") and r.headers["Allow"] == "POST"
    assert (await client.post("/hooks", data=BODY, headers=auth)).status == 200


async def test_the_connection_guard_sees_every_request_start_and_finish(aiohttp_client: Any, tmp_path: Path) -> None:
    conns = ConnectionGuard(ConnLimits())
    seen: list[str] = []
    started, finished = conns.started, conns.finished

    def start(t: Any) -> None:
        seen.append(BUSY)
        started(t)

    def finish(t: Any) -> None:
        seen.append(IDLE)
        finished(t)

    conns.started = start  # type: ignore[method-assign,assignment]
    conns.finished = finish  # type: ignore[method-assign,assignment]
    cfg = ServeConfig(db_path=tmp_path / "d.db", tail=False, schedule=False, watchdog_interval_s=3600)
    client = await aiohttp_client(assemble(cfg, apply=hookwriter.store_rows, conns=conns), headers=JSON_HEADERS)
    assert (await client.post("/hooks", data=BODY)).status == 200
    assert (await client.get("/nowhere")).status == 404  # raised by the route: still finished
    assert (await client.get("/", headers={"Host": "evil.example"})).status == 421  # refused: still finished
    assert seen == [BUSY, IDLE] * 3


async def test_a_handler_that_fails_answers_in_the_one_shape_and_logs_why(
    aiohttp_client: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    from structlog.testing import capture_logs

    from ingestd.core import statusline

    def broken(snap: object) -> str:
        raise ValueError("no key for this input")

    monkeypatch.setattr(statusline, "snapshot_key", broken)
    client = await aiohttp_client(_app(tmp_path / "d.db"), headers=JSON_HEADERS)
    body = orjson.dumps({"session_id": "s1"})
    with capture_logs() as logs:
        r = await client.post("/statusline", data=body)
        assert await _code(r) == (500, "internal_error")
    failed = [e for e in logs if e["event"] == "request_failed"]
    assert failed and failed[0]["path"] == "/statusline" and failed[0]["log_level"] == "error"
    assert (await client.post("/hooks", data=BODY)).status == 200  # the daemon goes on
