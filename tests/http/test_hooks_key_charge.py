"""A client-keyed delivery's key check (``hooks._check_reuse``) after its commit: its body stays
charged to the in-flight budget until the answer, and the commit and the check share one deadline
(``hook_timeout_ms``)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.core.decode import decoded_bytes
from ingestd.daemon import hookwriter
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import assemble
from ingestd.http import hooks as hooks_mod
from ingestd.http.hooks import HookConfig
from ingestd.store.logrows import payload_under_key
from tests.hookclient import JSON_HEADERS


def _body(**kw: Any) -> bytes:
    return orjson.dumps({"hook_event_name": "Stop", "session_id": "s1", **kw})


def _config(tmp_path: Path, hooks: HookConfig) -> ServeConfig:
    return ServeConfig(
        db_path=tmp_path / "d.db",
        tail=False,
        schedule=False,
        watchdog_interval_s=3600,
        hooks=hooks,
    )


async def test_a_keyed_body_stays_charged_while_its_key_is_checked(
    aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate, entered = threading.Event(), threading.Event()

    def slow(conn: Any, key: str) -> Any:
        entered.set()
        gate.wait(10)
        return payload_under_key(conn, key)

    monkeypatch.setattr(hooks_mod, "payload_under_key", slow)
    wide = _body(p=[{}] * 50_000)
    cost = decoded_bytes(wide)
    hooks = HookConfig(max_decoded_bytes_in_flight=cost + cost // 2, hook_timeout_ms=5000)
    client = await aiohttp_client(assemble(_config(tmp_path, hooks), apply=hookwriter.store_rows), headers=JSON_HEADERS)
    loop = asyncio.get_running_loop()
    first = asyncio.ensure_future(client.post("/hooks", data=wide, headers={"Idempotency-Key": "k1"}))
    try:
        assert await loop.run_in_executor(None, entered.wait, 5)  # committed; its decoded body still held
        second = await client.post("/hooks", data=_body(p=[{}] * 50_000, n=2), headers={"Idempotency-Key": "k2"})
        assert second.status == 503 and (await second.json())["error"]["code"] == "busy"
    finally:
        gate.set()
    assert (await first).status == 200
    third = await client.post("/hooks", data=_body(p=[{}] * 50_000, n=3), headers={"Idempotency-Key": "k3"})
    assert third.status == 200  # the first's charge came back with its answer


async def test_the_commit_and_the_key_check_share_one_deadline(
    aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the commit takes 0.25 s and the check 0.3 s: each under the 0.4 s timeout, together over it
    def slow_apply(conn: Any, rows: Any) -> int:
        time.sleep(0.25)
        return hookwriter.store_rows(conn, rows)

    def slow_check(conn: Any, key: str) -> Any:
        time.sleep(0.3)
        return payload_under_key(conn, key)

    monkeypatch.setattr(hooks_mod, "payload_under_key", slow_check)
    client = await aiohttp_client(
        assemble(_config(tmp_path, HookConfig(hook_timeout_ms=400)), apply=slow_apply), headers=JSON_HEADERS
    )
    resp = await client.post("/hooks", data=_body(), headers={"Idempotency-Key": "k1"})
    assert resp.status == 503 and (await resp.json())["error"]["code"] == "timeout"
