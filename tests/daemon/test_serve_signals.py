"""``ingestd serve`` stops cleanly on SIGHUP as on SIGTERM: a closed terminal or the end of its shell
job once killed it outright (no clean stop: requests reset, state file and lock left behind)."""

from __future__ import annotations

import signal
from pathlib import Path

import orjson
import pytest

from tests.reliability.daemon import Daemon
from tests.support import free_port


@pytest.mark.timeout(60)
def test_sighup_stops_the_daemon_cleanly(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    d = Daemon(tmp_path / "d.db", root, free_port(), tmp_path / "serve.log")
    d.start()
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    assert d.proc.wait(30) == 0
    lines = [orjson.loads(x) for x in (tmp_path / "serve.log").read_bytes().splitlines() if x.startswith(b"{")]
    assert "stopped" in [e.get("event") for e in lines]
    state = orjson.loads((tmp_path / "d.db.serve.json").read_bytes())
    assert state.get("stopped_at")
