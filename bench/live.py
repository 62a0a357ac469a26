"""Append-to-projected latency on a live daemon tailing a temporary projects root.

One assistant line with a fresh ``message.id`` is appended to a transcript; the clock stops when its
``token_usage`` rows are visible to a reader (the projection commits in the same transaction as the log
row). Done twice: in a short session, and at the end of a long one (a copy of the corpus's largest
transcript), to show whether the per-append cost depends on session length (SPEC §7, §11).
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from bench.daemon import running_daemon, temp_workdir

SHORT_SID = "c0000000-0000-4000-8000-000000000001"


def assistant_line(session_id: str, n: int, tag: str) -> bytes:
    """A complete assistant record (one billed message, unique ``message.id``), newline included."""
    rec = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/bench/project",
        "sessionId": session_id,
        "version": "2.0.50",
        "gitBranch": "main",
        "message": {
            "model": "claude-sonnet-4-5-20250929",
            "id": f"msg_bench_{tag}_{n:06d}",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": f"bench line {n}"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 3,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 100,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 7,
            },
        },
        "requestId": f"req_bench_{tag}_{n:06d}",
        "type": "assistant",
        "uuid": f"d0000000-0000-4000-8000-{n:012d}",
        "timestamp": f"2025-12-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
    }
    return orjson.dumps(rec) + b"\n"


@dataclass
class LiveResult:
    """Append-to-projected latencies.

    Attributes:
        short_s: list[float], appends to a short (new) session.
        long_s: list[float], appends to the end of a long session.
        long_lines: int, lines in the long session before the appends.
        timeouts: int, appends not projected within the deadline.
        error: str, why it could not be measured.
    """

    short_s: list[float] = field(default_factory=list)
    long_s: list[float] = field(default_factory=list)
    long_lines: int = 0
    timeouts: int = 0
    error: str = ""


def _visible(db: Path, message_id: str) -> bool:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return False
    try:
        row = conn.execute("SELECT 1 FROM token_usage WHERE message_id = ? LIMIT 1", (message_id,)).fetchone()
        return row is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _wait_visible(db: Path, message_id: str, deadline_s: float) -> float | None:
    t0 = time.perf_counter()
    end = t0 + deadline_s
    while time.perf_counter() < end:
        if _visible(db, message_id):
            return time.perf_counter() - t0
        time.sleep(0.002)
    return None


def _append_series(
    path: Path, db: Path, sid: str, tag: str, count: int, deadline_s: float, res: LiveResult
) -> list[float]:
    out = []
    for n in range(count):
        line = assistant_line(sid, n, tag)
        t0 = time.perf_counter()
        with open(path, "ab") as f:
            f.write(line)
        waited = _wait_visible(db, f"msg_bench_{tag}_{n:06d}", deadline_s)
        if waited is None:
            res.timeouts += 1
            continue
        out.append(time.perf_counter() - t0)
        time.sleep(0.05)  # appends arrive spaced out, as Claude Code writes them
    return out


def measure_live(long_source: Path, appends: int, deadline_s: float = 5.0, settle_s: float = 120.0) -> LiveResult:
    """Start a daemon on a temporary projects root, then time ``appends`` appends to each session."""
    res = LiveResult()
    with temp_workdir() as tmp:
        work = Path(tmp)
        root = work / "projects" / "-home-bench-project"
        root.mkdir(parents=True)
        long_path = root / long_source.name
        shutil.copyfile(long_source, long_path)
        res.long_lines = long_path.read_bytes().count(b"\n")
        short_path = root / f"{SHORT_SID}.jsonl"
        short_path.write_bytes(b"")
        try:
            with running_daemon(work, work / "projects") as d:
                # wait until the long session is in (its last complete line's message is projected)
                warm = assistant_line(long_source.stem, 0, "warm")
                with open(long_path, "ab") as f:
                    f.write(warm)
                if _wait_visible(d.db, "msg_bench_warm_000000", settle_s) is None:
                    res.error = f"the daemon did not project the copied session within {settle_s:.0f} s"
                    return res
                res.short_s = _append_series(short_path, d.db, SHORT_SID, "short", appends, deadline_s, res)
                res.long_s = _append_series(long_path, d.db, long_source.stem, "long", appends, deadline_s, res)
        except RuntimeError as e:
            res.error = str(e)
    return res
