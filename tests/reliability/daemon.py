"""A real ``ingestd serve`` under mixed load, killed with SIGKILL at random moments.

``Load`` runs, in threads: hook clients posting tool events with unique ``tool_use_id`` (a 200
is recorded as acknowledged), an appender growing live transcripts (some lines written in two
parts, so a kill can land on a torn tail), and a pre-built history the daemon's catch-up is
still reading when the first kill lands (the backfill). ``verify`` then checks the promises
of SPEC §12 against what the threads recorded and what is on disk.
"""

from __future__ import annotations

import http.client
import os
import random
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ingestd.core.framing import split_lines
from tests.reliability.support import q
from tests.support import free_port

SLUG = "-tmp-reliability"


def record(sid: str, i: int, *, assistant: bool) -> bytes:
    base: dict[str, Any] = {
        "uuid": f"{sid}-{i}",
        "sessionId": sid,
        "timestamp": f"2026-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}.000Z",
        "cwd": "/tmp/reliability",
    }
    if assistant:
        base |= {
            "type": "assistant",
            "requestId": f"req_{sid}_{i}",
            "message": {
                "id": f"msg_{sid}_{i}",
                "model": "claude-opus-4-6",
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input_tokens": 3, "output_tokens": i % 50 + 1, "cache_read_input_tokens": 7},
            },
        }
    else:
        base |= {"type": "user", "message": {"role": "user", "content": f"line {i} " + "x" * (i % 200)}}
    return orjson.dumps(base) + b"\n"


def session_id(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-000000000000"


def build_history(root: Path, sessions: int, lines: int) -> None:
    """Old transcripts the daemon's catch-up has to read (the backfill)."""
    d = root / SLUG
    d.mkdir(parents=True, exist_ok=True)
    for s in range(sessions):
        sid = session_id(s)
        (d / f"{sid}.jsonl").write_bytes(b"".join(record(sid, i, assistant=i % 3 == 0) for i in range(lines)))


def _address_space(n: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (n, n))

    return limit


@dataclass
class Daemon:
    db: Path
    root: Path
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def in_dir(cls, tmp: Path) -> Daemon:
        """A daemon of its own in ``tmp``: ``d.db``, an empty ``projects`` root, ``serve.log``, a free port."""
        root = tmp / "projects"
        root.mkdir()
        return cls(tmp / "d.db", root, free_port(), tmp / "serve.log")

    def start(self, timeout_s: float = 20.0, *, address_space_bytes: int | None = None) -> None:
        """Start ``ingestd serve`` and wait for its health to answer; with ``address_space_bytes``,
        under that ``RLIMIT_AS`` (set in the child before it runs Python)."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "INGESTD_SCHEDULE_ENABLED": "false"}
        argv = [
            *(sys.executable, "-m", "ingestd", "serve", "--db", str(self.db), "--projects", str(self.root)),
            *("--port", str(self.port), "--watchdog-interval-s", "3600", "--rescan-interval-s", "0.5"),
        ]
        with self.log.open("ab") as out:
            limit = None if address_space_bytes is None else _address_space(address_space_bytes)
            self.proc = subprocess.Popen(argv, stdout=out, stderr=out, env=env, preexec_fn=limit)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
            try:
                c.request("GET", "/api/health")
                c.getresponse().read()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise AssertionError("daemon exited: " + self.log.read_text()[-3000:]) from None
                time.sleep(0.05)
            finally:
                c.close()
        self.proc.kill()
        raise AssertionError("daemon did not start: " + self.log.read_text()[-3000:])

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


@dataclass
class Load:
    """The mixed load; start() launches the threads, finish() stops and joins them."""

    root: Path
    port: int
    clients: int = 4
    live_sessions: int = 2
    seed: int = 0
    acked: list[str] = field(default_factory=list)
    attempts: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def live_files(self) -> list[Path]:
        return [self.root / SLUG / f"{session_id(1000 + s)}.jsonl" for s in range(self.live_sessions)]

    def start(self) -> None:
        for f in self.live_files():
            f.parent.mkdir(parents=True, exist_ok=True)
            f.touch()
        self._threads = [threading.Thread(target=self._client, args=(c,)) for c in range(self.clients)]
        self._threads += [threading.Thread(target=self._appender, args=(f, i)) for i, f in enumerate(self.live_files())]
        for t in self._threads:
            t.start()

    def finish(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)

    def _client(self, c: int) -> None:
        sid = session_id(2000 + c)
        i = 0
        conn: http.client.HTTPConnection | None = None
        while not self._stop.is_set():
            tuid = f"toolu_{c}_{i}"
            i += 1
            event = "PreToolUse" if i % 2 else "PostToolUse"
            body = orjson.dumps(
                {
                    "hook_event_name": event,
                    "session_id": sid,
                    "tool_use_id": tuid,
                    "tool_name": "Bash",
                    "tool_input": {"command": "true"},
                }
            )
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("POST", "/hooks", body=body, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
            except (OSError, http.client.HTTPException):
                if conn is not None:
                    conn.close()
                conn = None
                time.sleep(0.02)  # the daemon is down: try again shortly (a new event)
                continue
            finally:
                with self._lock:
                    self.attempts += 1
            if resp.status == 200:
                with self._lock:
                    self.acked.append(tuid)
        if conn is not None:
            conn.close()

    def _appender(self, path: Path, k: int) -> None:
        rng = random.Random(self.seed * 100 + k)
        sid = path.stem
        i = 0
        while not self._stop.is_set():
            data = record(sid, i, assistant=i % 2 == 1)
            i += 1
            with path.open("ab") as fh:
                if rng.random() < 0.2:  # a torn tail for a moment
                    cut = rng.randrange(1, len(data))
                    fh.write(data[:cut])
                    fh.flush()
                    time.sleep(rng.uniform(0, 0.01))
                    fh.write(data[cut:])
                else:
                    fh.write(data)
            time.sleep(rng.uniform(0, 0.004))


def expected_lines(root: Path) -> dict[str, list[tuple[int, bytes]]]:
    """origin -> [(offset, line bytes)] of every complete line on disk."""
    out: dict[str, list[tuple[int, bytes]]] = {}
    for f in sorted((root / SLUG).glob("*.jsonl")):
        lines, _ = split_lines(f.read_bytes())
        out[f"{SLUG}/{f.name}"] = [(ln.offset, ln.data) for ln in lines]
    return out


def wait_caught_up(db: Path, root: Path, timeout_s: float = 60.0) -> None:
    want = sum(len(v) for v in expected_lines(root).values())
    deadline = time.monotonic() + timeout_s
    got = 0
    while time.monotonic() < deadline:
        got = q(db, "SELECT count(*) FROM events_raw WHERE source = 'jsonl'")[0][0]
        if got >= want:
            return
        time.sleep(0.05)
    raise AssertionError(f"catch-up did not finish: {got} of {want} lines")


def verify(db: Path, root: Path, acked: list[str], workdir: Path) -> None:
    """Every 2xx exactly once; every complete line exactly once, verbatim; replay exits 0."""
    stored = [
        str(orjson.loads(bytes(p))["tool_use_id"])
        for (p,) in q(db, "SELECT payload_bytes(codec, payload) FROM events_raw WHERE source = 'hook'")
    ]
    assert len(stored) == len(set(stored)), "a hook delivery is in the log twice"
    missing = set(acked) - set(stored)
    assert not missing, f"{len(missing)} acknowledged deliveries lost, e.g. {sorted(missing)[:3]}"
    want = expected_lines(root)
    rows = q(
        db,
        "SELECT origin, origin_gen, origin_offset, payload_bytes(codec, payload), event_type FROM events_raw"
        " WHERE source = 'jsonl'",
    )
    got: dict[str, list[tuple[int, bytes]]] = {}
    for origin, gen, off, payload, etype in rows:
        assert gen == 0 and etype != "invalid", (origin, off, etype)  # no torn line stored, no false rewrite
        got.setdefault(origin, []).append((off, bytes(payload)))
    for origin in want:
        have = sorted(got.get(origin, []))
        assert len(have) == len({o for o, _ in have}), f"{origin}: a line stored twice"
        assert have == want[origin], f"{origin}: {len(have)} lines stored, {len(want[origin])} on disk"
    r = subprocess.run(
        [sys.executable, "-m", "ingestd", "replay", "--db", str(db), "--workdir", str(workdir), "--json"],
        capture_output=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def kill_loop(tmp: Path, *, kills: int, history: tuple[int, int], seed: int, up_s: tuple[float, float]) -> Load:
    """Start, run under load, kill -9 ``kills`` times at random moments, restart; verify."""
    rng = random.Random(seed)
    root = tmp / "projects"
    build_history(root, *history)
    d = Daemon(tmp / "k.db", root, free_port(), tmp / "serve.log")
    load = Load(root, d.port, seed=seed)
    d.start()
    load.start()
    try:
        for _ in range(kills):
            time.sleep(rng.uniform(*up_s))
            d.kill9()
            time.sleep(rng.uniform(0, 0.2))
            d.start()
        time.sleep(rng.uniform(*up_s))
    finally:
        load.finish()
    settle_and_verify(d, load, tmp / "replay", min_acked=20 * (kills + 1))
    return load


def settle_and_verify(d: Daemon, load: Load, workdir: Path, *, min_acked: int) -> None:
    """After ``load.finish()``: let the daemon catch up, stop it cleanly, then ``verify``."""
    try:
        wait_caught_up(d.db, d.root)
    finally:
        assert d.stop() == 0, d.log.read_text()[-3000:]
    assert len(load.acked) > min_acked, (len(load.acked), d.log.read_text()[-2000:])
    workdir.mkdir()
    verify(d.db, d.root, load.acked, workdir)
