"""``bench.hookwrk``: wrk's summary read right, and wrk sends exactly the bodies ``bench.hookload`` makes."""

from __future__ import annotations

import asyncio
import shutil
from typing import Any

import pytest
from aiohttp import web

from bench.hookload import hook_body
from bench.hookwrk import parse_output, run_wrk

SUMMARY = (
    b"Running 5s test @ http://127.0.0.1:1\n  1 threads and 16 connections\n"
    b'WRKJSON {"requests":1000,"duration_us":2000000,"connect":0,"read":2,"write":0,"status":10,"timeout":3,'
    b'"pct_us":{"50":5140,"90":9000,"95":11000,"99":24070,"99.9":40000}}\n'
)


def test_the_summary_counts_only_2xx_and_keeps_the_percentiles() -> None:
    r = parse_output(SUMMARY, 16, cpu_s=0.5)
    assert (r.ok, r.elapsed_s, r.rate) == (990, 2.0, 495.0)
    assert r.failed == {"non-2xx": 10, "read": 2, "timeout": 3}
    assert (r.pct_ms(50), r.pct_ms(99), r.pct_ms(99.9)) == (5.14, 24.07, 40.0)
    assert r.pct_ms(75) != r.pct_ms(75)  # not measured: NaN
    assert r.cpu_s == 0.5


def test_no_summary_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="no summary"):
        parse_output(b"unable to connect to 127.0.0.1:1 Connection refused\n", 1, 0.0)


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
async def test_wrk_posts_the_bodies_hookload_makes(aiohttp_server: Any) -> None:
    got: list[bytes] = []

    async def hooks(request: web.Request) -> web.Response:
        assert request.content_type == "application/json"
        got.append(await request.read())
        return web.Response(status=200 if len(got) % 50 else 503)  # every 50th one refused

    app = web.Application()
    app.router.add_post("/hooks", hooks)
    server = await aiohttp_server(app)
    exe = shutil.which("wrk")
    assert exe is not None
    r = await asyncio.get_running_loop().run_in_executor(
        None, run_wrk, exe, f"http://127.0.0.1:{server.port}", 2, 1.0, "t1"
    )
    assert r.ok > 100
    assert r.failed.get("non-2xx", 0) >= r.ok // 50 - 2  # the refusals are not counted as 2xx
    expected = {hook_body(n, "t1") for n in range(len(got) + 10)}
    assert len(set(got)) == len(got)  # every body distinct
    assert set(got) <= expected  # byte for byte the Python generator's bodies
    assert len(got) >= r.ok
