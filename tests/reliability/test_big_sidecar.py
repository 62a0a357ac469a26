"""A subagent ``.meta.json`` of 1 GiB (sparse) in the root of a daemon under a 1 GiB address-space
limit: it is logged as an oversized marker, never read whole, and every hook is answered 200.

A real ``ingestd serve`` started with ``RLIMIT_AS`` (``resource.setrlimit`` in the child): reading
the sidecar whole needs more than the limit leaves, so a daemon that did crashed or stalled.
"""

from __future__ import annotations

import http.client
import os
import time
from pathlib import Path

import orjson
import pytest

from tests.reliability.daemon import Daemon
from tests.reliability.support import q

SID = "11111111-1111-4111-8111-111111111111"
GIB = 1 << 30


def _hook(port: int, i: int) -> int:
    body = orjson.dumps(
        {"hook_event_name": "PreToolUse", "session_id": SID, "tool_use_id": f"t{i}", "tool_name": "Bash"}
    )
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("POST", "/hooks", body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def _sidecar(root: Path, name: str) -> Path:
    d = root / "-p" / SID / "subagents"
    d.mkdir(parents=True, exist_ok=True)
    f = d / name
    with f.open("wb") as fh:
        fh.write(b'{"agentType": "')
        fh.truncate(GIB)  # sparse: a gibibyte of NULs after the head
    return f


def _markers(db: Path) -> list[tuple[str, int]]:
    rows = q(db, "SELECT origin, payload_bytes(codec, payload) FROM events_raw WHERE event_type = 'meta'")
    return [(o, orjson.loads(bytes(p))["oversized"]["length"]) for o, p in rows]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_1gib_sidecar_under_a_memory_limit_keeps_hooks_answered(tmp_path: Path) -> None:
    d = Daemon.in_dir(tmp_path)
    _sidecar(d.root, "agent-a1.meta.json")  # read by the start-up catch-up
    d.start(address_space_bytes=GIB)
    try:
        _sidecar(d.root, "agent-a2.meta.json")  # and one the tailer finds while it runs
        statuses = []
        deadline = time.monotonic() + 120
        i = 0
        while time.monotonic() < deadline:
            statuses.append(_hook(d.port, i))
            i += 1
            if len(_markers(d.db)) == 2 and i >= 50:
                break
        assert d.proc is not None and d.proc.poll() is None, d.log.read_text()[-3000:]
        assert statuses and set(statuses) == {200}, (statuses[-5:], d.log.read_text()[-3000:])
        assert sorted(_markers(d.db)) == [
            ("-p/" + SID + "/subagents/agent-a1.meta.json", GIB),
            ("-p/" + SID + "/subagents/agent-a2.meta.json", GIB),
        ]
        assert b"sidecar_oversized" in d.log.read_bytes()
        assert q(d.db, "SELECT count(*) FROM events_raw WHERE source = 'hook'")[0][0] == i
    finally:
        assert d.stop() == 0, d.log.read_text()[-3000:]
    os.sync()
