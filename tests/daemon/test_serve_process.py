"""Kill -9 a real `ingestd serve` under hook load while a transcript grows; restart; nothing lost."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from ingestd.core.records import NewLogRow
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.writer import apply_batch
from tests.daemon.support import user_line
from tests.reliability.daemon import Daemon
from tests.reliability.support import q
from tests.support import free_port, wait_for

SID = "99999999-2222-3333-4444-555555555555"
PROJECTED = {
    "sessions": "SELECT * FROM sessions ORDER BY id",
    "agents": "SELECT * FROM agents ORDER BY id",
    "tool_calls": "SELECT * FROM tool_calls ORDER BY session_id, tool_use_id",
    "events": "SELECT * FROM events ORDER BY raw_event_id",
}


def transcript_line(i: int) -> bytes:
    return user_line(SID, i, text="line", timestamp="2026-01-01T00:00:00.000Z")


@pytest.mark.slow  # kill -9 class: make reliability
@pytest.mark.timeout(60)
def test_kill_9_under_load_loses_nothing_acknowledged(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "-tmp-p").mkdir(parents=True)
    transcript = root / "-tmp-p" / f"{SID}.jsonl"
    transcript.write_bytes(b"")
    db = tmp_path / "k.db"
    log = tmp_path / "serve.log"
    port = free_port()
    daemon = Daemon(db, root, port, log)
    daemon.start()

    acked: list[str] = []
    acked_lock = threading.Lock()
    stop = threading.Event()
    lines_written = 0

    def client(c: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        i = 0
        while not stop.is_set():
            tuid = f"toolu_{c}_{i}"
            i += 1
            body = orjson.dumps(
                {"hook_event_name": "PreToolUse", "session_id": SID, "tool_use_id": tuid, "tool_name": "Bash"}
            )
            try:
                conn.request("POST", "/hooks", body=body, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                return
            if resp.status == 200:
                with acked_lock:
                    acked.append(tuid)
        conn.close()

    def appender() -> None:
        nonlocal lines_written
        while not stop.is_set():
            with transcript.open("ab") as fh:
                fh.write(transcript_line(lines_written))
            lines_written += 1
            time.sleep(0.005)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(8)]
    threads.append(threading.Thread(target=appender))
    for t in threads:
        t.start()
    # kill it mid-load: once over 100 hooks are acknowledged and the transcript has grown
    wait_for("the load to get going", lambda: len(acked) > 100 and lines_written > 50, timeout_s=30)
    daemon.kill9()
    stop.set()
    for t in threads:
        t.join(10)

    daemon.start()
    try:
        # the restart catches up the transcript; wait on that condition
        deadline = time.monotonic() + 15
        while q(db, "SELECT count(*) FROM events_raw WHERE source = 'jsonl'")[0][0] < lines_written:
            assert time.monotonic() < deadline, "catch-up after restart did not finish"
            time.sleep(0.05)
    finally:
        assert daemon.stop() == 0, log.read_text()[-2000:]

    stored = [
        orjson.loads(bytes(p))["tool_use_id"]
        for (p,) in q(db, "SELECT payload_bytes(codec, payload) FROM events_raw WHERE source = 'hook'")
    ]
    assert len(stored) == len(set(stored))  # no duplicates
    assert set(acked) <= set(stored)  # every 2xx is in the log
    offsets = q(db, "SELECT origin_offset FROM events_raw WHERE source = 'jsonl' ORDER BY origin_offset")
    assert len(offsets) == lines_written == len({o for (o,) in offsets})  # every line once
    assert q(db, "SELECT count(*) FROM events_raw WHERE event_type = 'invalid'")[0][0] == 0

    # the projections equal an uninterrupted run over the same log
    fresh_path = tmp_path / "fresh.db"
    fresh = connect(fresh_path)
    migrate(fresh)
    raw = q(
        db,
        "SELECT idempotency_key, source, event_type, payload_bytes(codec, payload), received_at, session_id,"
        " origin, origin_gen, origin_offset FROM events_raw ORDER BY id",
    )
    rows = [NewLogRow(r[0], r[1], r[2], bytes(r[3]), *r[4:]) for r in raw]
    for i in range(0, len(rows), 500):
        apply_batch(fresh, rows[i : i + 500])
    fresh.close()
    for name, sql in PROJECTED.items():
        assert q(db, sql) == q(fresh_path, sql), name


TOKEN_ARGS = ("--token-env", "MY_TOKEN")


def test_second_daemon_port_taken_and_public_bind_refused(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    db = tmp_path / "a.db"
    log = tmp_path / "serve.log"
    port = free_port()
    secret = "tok-" + os.urandom(8).hex()
    env = {**os.environ, "MY_TOKEN": secret}
    daemon = Daemon(db, root, port, log)
    daemon.start()
    try:
        base = [sys.executable, "-m", "ingestd", "serve", "--projects", str(root)]
        same_db = subprocess.run([*base, "--db", str(db), "--port", str(free_port())], capture_output=True, timeout=30)
        assert same_db.returncode == 2
        assert b"already running" in same_db.stderr
        same_port = subprocess.run(
            [*base, "--db", str(tmp_path / "b.db"), "--port", str(port)], capture_output=True, timeout=30
        )
        assert same_port.returncode == 2
        assert b"cannot listen" in same_port.stderr
        public = subprocess.run(
            [*base, "--db", str(tmp_path / "c.db"), "--host", "0.0.0.0", "--port", str(free_port())],
            capture_output=True,
            timeout=30,
        )
        assert public.returncode == 2
        assert b"needs a token" in public.stderr
        # with a token from the environment it starts; the token never reaches the log
        tok_port = free_port()
        tok = subprocess.Popen(
            [*base, "--db", str(tmp_path / "d.db"), "--host", "0.0.0.0", "--port", str(tok_port), *TOKEN_ARGS],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + 15
        status = None
        while status is None and time.monotonic() < deadline:
            c = http.client.HTTPConnection("127.0.0.1", tok_port, timeout=1)
            try:
                c.request("POST", "/hooks", body=b'{"hook_event_name":"Stop","session_id":"s"}')
                resp = c.getresponse()
                resp.read()
                status = resp.status
            except OSError:
                time.sleep(0.05)
            finally:
                c.close()
        tok.send_signal(signal.SIGTERM)
        out, _ = tok.communicate(timeout=15)
        assert status == 401
        assert tok.returncode == 0
        assert secret.encode() not in out
    finally:
        daemon.stop()
