"""Receipt times never step back within a daemon's run: after the wall clock is stepped back (NTP
after a suspend, a VM resumed), a Stop still makes the session wait and a tool call ends after it
started; a forward step is followed at once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.daemon.config import ServeConfig
from ingestd.daemon.receiptclock import ReceiptClock
from ingestd.daemon.root import assemble
from ingestd.store.connection import connect
from tests.hookclient import JSON_HEADERS

SID = "11111111-2222-4333-8444-555555555555"
HOUR_NS = 3600 * 10**9


def test_a_backward_step_is_not_followed_and_a_forward_one_is() -> None:
    wall, steady = [10 * HOUR_NS], [0]
    c = ReceiptClock(wall=lambda: wall[0], steady=lambda: steady[0])
    assert c() == 10 * HOUR_NS
    steady[0] += 5
    wall[0] -= HOUR_NS  # stepped back an hour
    assert c() == 10 * HOUR_NS + 5  # the steady clock's time, not the wall's
    steady[0] += 5
    assert c() == 10 * HOUR_NS + 10
    assert c() == 10 * HOUR_NS + 11  # strictly increasing, even with no time between
    wall[0] = 12 * HOUR_NS  # stepped forward (a suspend the steady clock missed)
    assert c() == 12 * HOUR_NS
    steady[0] += 7
    assert c() == 12 * HOUR_NS + 7


def _hook(name: str, **more: Any) -> bytes:
    return orjson.dumps({"hook_event_name": name, "session_id": SID, "cwd": "/w", **more})


async def test_a_wall_clock_stepped_back_keeps_status_and_tool_times_consistent(
    tmp_path: Path, aiohttp_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = time.time_ns
    back = [0]
    monkeypatch.setattr(time, "time_ns", lambda: real() - back[0])
    cfg = ServeConfig(db_path=tmp_path / "c.db", tail=False, schedule=False, watchdog_interval_s=3600)
    client = await aiohttp_client(assemble(cfg), headers=JSON_HEADERS)
    tool = {"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "true"}}
    assert (await client.post("/hooks", data=_hook("UserPromptSubmit", prompt="go"))).status == 200
    assert (await client.post("/hooks", data=_hook("PreToolUse", **tool))).status == 200
    back[0] = HOUR_NS  # NTP steps the clock back an hour
    assert (await client.post("/hooks", data=_hook("PostToolUse", **tool, tool_response={}))).status == 200
    assert (await client.post("/hooks", data=_hook("Stop"))).status == 200
    conn = connect(cfg.db_path, readonly=True)
    try:
        [(started, ended, status)] = conn.execute(
            "SELECT started_at, ended_at, status FROM tool_calls WHERE tool_use_id = 'toolu_1'"
        ).fetchall()
        agents = conn.execute("SELECT status FROM agents WHERE session_id = ?", (SID,)).fetchall()
        received = [r[0] for r in conn.execute("SELECT received_at FROM events_raw WHERE source = 'hook' ORDER BY id")]
    finally:
        conn.close()
    assert status == "completed" and started <= ended, (started, ended)
    assert agents == [("waiting",)]
    assert received == sorted(received) and len(set(received)) == 4
