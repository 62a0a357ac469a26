"""The hook writer process dies with its daemon, even stopped (``ingestd.daemon.lifeline``).

It once outlived a ``kill -9`` of ``serve`` while stopped with SIGSTOP (with the database's write
connection open), and kept its forkserver alive too, until something continued or killed it.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import sys
from pathlib import Path

import orjson
import pytest

from tests.reliability.daemon import Daemon
from tests.support import free_port, wait_for

SID = "11fe11fe-0000-4000-8000-000000000001"


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def _gone(pid: int) -> bool:
    s = _stat(pid)
    return s is None or s[0] in ("Z", "X")  # a zombie is dead, only its parent's reaping is left


def _writer_pid(log: Path) -> int | None:
    for line in log.read_text(errors="replace").splitlines():
        if "writer_process_started" in line:
            with contextlib.suppress(orjson.JSONDecodeError, KeyError, TypeError):
                return int(orjson.loads(line)["pid"])
    return None


def _post(port: int, i: int) -> int:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        body = orjson.dumps({"hook_event_name": "Notification", "session_id": SID, "message": f"m{i}"})
        c.request("POST", "/hooks", body=body, headers={"Content-Type": "application/json"})
        resp = c.getresponse()
        resp.read()
        return resp.status
    finally:
        c.close()


@pytest.mark.slow  # kill -9 class: make reliability
@pytest.mark.timeout(90)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_stopped_writer_does_not_outlive_a_kill_9_of_serve(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    db, log = tmp_path / "w.db", tmp_path / "serve.log"
    daemon = Daemon(db, root, free_port(), log)
    daemon.start()
    assert daemon.proc is not None
    writer = wait_for("the writer process", lambda: _writer_pid(log))
    state = _stat(writer)
    assert state is not None
    forkserver = state[1]
    assert (_stat(forkserver) or ("", 0))[1] == daemon.proc.pid  # the writer's parent is the forkserver
    try:
        assert _post(daemon.port, 0) == 200
        os.kill(writer, signal.SIGSTOP)
        wait_for("the writer stopped", lambda: (_stat(writer) or ("",))[0] == "T")
        daemon.kill9()
        wait_for("the stopped writer gone with its daemon", lambda: _gone(writer), timeout_s=15)
        wait_for("its forkserver gone too", lambda: _gone(forkserver), timeout_s=15)
    finally:
        for pid in (writer, forkserver):  # on failure: nothing of this test is left running
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
    # and nothing holds the database: a new daemon takes hooks at once
    daemon.start()
    try:
        assert _post(daemon.port, 1) == 200
    finally:
        assert daemon.stop() == 0
