"""The database file replaced (``mv backup.db d.db``) or deleted (``rm d.db*``) under a real
``ingestd serve`` during a hook burst: no hook sent after that is acknowledged unless it is in the
file the path names after a restart, the daemon stops by itself with the reason, the restored file
is intact (its stale WAL emptied, not replayed onto it) and ``ingestd replay`` exits 0 on it."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from ingestd.retention.backup import copy_database
from ingestd.store.connection import connect
from tests.reliability.daemon import Daemon
from tests.reliability.support import q

SID = "11111111-1111-4111-8111-111111111111"


class Burst:
    """Hook clients in threads, each delivery recorded as (monotonic start, tool_use_id, status)."""

    def __init__(self, port: int, clients: int = 4) -> None:
        self.port = port
        self.sent: list[tuple[float, str, int]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._client, args=(c,)) for c in range(clients)]

    def __enter__(self) -> Burst:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)

    def _client(self, c: int) -> None:
        i = 0
        while not self._stop.is_set():
            tuid = f"toolu_{c}_{i}"
            i += 1
            body = orjson.dumps({"hook_event_name": "PreToolUse", "session_id": SID, "tool_use_id": tuid})
            t0 = time.monotonic()
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                conn.request("POST", "/hooks", body=body, headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                r.read()
                status = r.status
            except (OSError, http.client.HTTPException):
                status = 0
                time.sleep(0.02)
            finally:
                conn.close()
            with self._lock:
                self.sent.append((t0, tuid, status))

    def acked(self, after: float = 0.0) -> set[str]:
        with self._lock:
            return {t for t0, t, s in self.sent if s == 200 and t0 >= after}


def _stored(db: Path) -> set[str]:
    rows = q(db, "SELECT payload_bytes(codec, payload) FROM events_raw WHERE source = 'hook'")
    return {str(orjson.loads(bytes(p))["tool_use_id"]) for (p,) in rows}


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["replace", "delete"])
def test_a_file_swapped_under_a_hook_burst_loses_no_acknowledged_hook(tmp_path: Path, how: str) -> None:
    d = Daemon.in_dir(tmp_path)
    d.start()
    assert d.proc is not None
    with Burst(d.port) as burst:
        time.sleep(1.5)
        if how == "replace":
            src = connect(d.db, readonly=True)
            try:
                copy_database(src, tmp_path / "backup.db")
            finally:
                src.close()
            time.sleep(0.5)  # more hooks land in the old file after the backup
            os.replace(tmp_path / "backup.db", d.db)
        else:
            for f in tmp_path.glob("d.db*"):
                f.unlink()
        swapped = time.monotonic()
        code = d.proc.wait(30)  # it stops by itself
        before = burst.acked()
    log = d.log.read_text()
    assert code != 0 and "database_file_lost" in log, log[-3000:]
    assert len(before) > 20
    late = burst.acked(after=swapped)
    if how == "replace":  # the state file beside the path says why it stopped
        st = subprocess.run(
            [sys.executable, "-m", "ingestd", "status", "--db", str(d.db), "--json"], capture_output=True, timeout=60
        )
        problem = orjson.loads(st.stdout)["daemon"]["problem"]
        assert "stopped by itself" in problem and "was replaced by another file" in problem, problem
    d.start()  # on the file the path names now (a new, empty one after the delete)
    assert d.stop() == 0
    stored = _stored(d.db)
    assert late <= stored, f"{len(late - stored)} hooks acknowledged after the swap are not in the file"
    assert q(d.db, "PRAGMA integrity_check") == [("ok",)]
    if how == "replace":
        assert stored and stored < before  # the backup's hooks, not those after it
    (tmp_path / "rp").mkdir()
    r = subprocess.run(
        [sys.executable, "-m", "ingestd", "replay", "--db", str(d.db), "--workdir", str(tmp_path / "rp"), "--json"],
        capture_output=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
