"""The cost page's "Now" panel: the official limits the status line reported and the 5-hour block
running now, updated live as a new snapshot and new usage arrive."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from tests.browser.conftest import Site
from tests.browser.test_live_view import js, open_view, post_hook
from tests.statusline.documented import documented
from tests.support import wait_for

pytestmark = pytest.mark.timeout(300)


def test_the_now_panel_shows_the_limits_and_the_active_block(browser: Any, site: Site) -> None:
    sid = str(uuid.uuid4())
    post_hook(site, documented(time.time(), session_id=sid), "/statusline")
    at = (datetime.now(UTC) - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    n = uuid.uuid4().hex[:8]
    message = {
        "id": "msg_" + n,
        "model": "claude-sonnet-4-5-20250929",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 100000, "output_tokens": 0},
    }
    rec = {"type": "assistant", "uuid": n, "sessionId": sid, "cwd": "/w", "requestId": "r" + n, "timestamp": at}
    rec["message"] = message
    project = site.root / "-w-now"
    project.mkdir(exist_ok=True)
    (project / f"{sid}.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    active = wait_for("the active block", lambda: site.cli("blocks", "--active")["active"])
    open_view(browser, site, "#/cost", "cost")
    text = wait_for(
        "the panel",
        lambda: (
            (t := js(browser, "const e = document.getElementById('cost-now'); return e && e.textContent"))
            and "42.5%" in t
            and t
        ),
    )
    assert "5-hour: 42.5%" in text and "projected" in text
    shown = js(browser, "return document.getElementById('now-block').dataset.costUsd")
    latest = site.cli("blocks", "--active")["active"]
    assert shown in (active["cost_usd"], latest["cost_usd"])
