"""``ingestd serve`` stops cleanly on SIGHUP as on SIGTERM: a closed terminal or the end of its shell
job once killed it outright (no clean stop: requests reset, state file and lock left behind)."""

from __future__ import annotations

import signal
from pathlib import Path

import orjson
import pytest

from tests.reliability.daemon import Daemon


@pytest.mark.timeout(60)
def test_sighup_stops_the_daemon_cleanly(tmp_path: Path) -> None:
    d = Daemon.in_dir(tmp_path)
    d.start()
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    assert d.proc.wait(30) == 0
    lines = [orjson.loads(x) for x in (tmp_path / "serve.log").read_bytes().splitlines() if x.startswith(b"{")]
    assert "stopped" in [e.get("event") for e in lines]
    state = orjson.loads((tmp_path / "d.db.serve.json").read_bytes())
    assert state.get("stopped_at")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_whole_group_stops_the_daemon_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    # systemd's SIGTERM goes to the whole group (its default KillMode), a Ctrl-C's SIGINT to the
    # foreground group: the daemon still drains its writer and stops cleanly, with no traceback
    import os
    import subprocess

    d = Daemon.in_dir(tmp_path)
    real_popen = subprocess.Popen

    def own_group(*a: object, **kw: object) -> subprocess.Popen[bytes]:
        return real_popen(*a, **kw, start_new_session=True)  # type: ignore[call-overload,no-any-return]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(subprocess, "Popen", own_group)
        d.start()
    assert d.proc is not None
    os.killpg(d.proc.pid, sig)
    assert d.proc.wait(30) == 0
    text = (tmp_path / "serve.log").read_text()
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    lines = [orjson.loads(x) for x in text.encode().splitlines() if x.startswith(b"{")]
    events = [e["event"] for e in lines]
    assert "writer_stopped" in events and events[-1] == "stopped"
