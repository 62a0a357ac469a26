"""Hook load from ``wrk`` (native, LuaJIT): the same deliveries as ``bench.hookload`` at a fraction of its CPU.

``bench.hookload`` (Python, aiohttp) needs about a quarter of a millisecond of CPU per request, a third
of this 2-core machine at 2,000 ev/s: the load generator, not the daemon, would set the ceiling.
``wrk`` 4.1 (Debian's ``wrk`` package) with ``bench/hookwrk.lua`` POSTs the same bodies (a
``PreToolUse`` in one of 8 sessions, a unique ``tool_use_id`` per request, so nothing is
de-duplicated away) over ``concurrency`` keep-alive connections from one thread, for a duration.

Counting: ``ok`` is wrk's completed requests minus its non-2xx/3xx ones (``/hooks`` never answers
3xx), so only 2xx count; socket errors and timeouts are ``failed``. Latency percentiles are wrk's
own distribution (every completed request, in microseconds). Run standalone::

    python -m bench.hookwrk --url http://127.0.0.1:7391 -c 16 -d 5
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

LUA = Path(__file__).with_name("hookwrk.lua")
WRK_PACKAGE = "wrk"
_LINE = re.compile(rb"^WRKJSON (\{.*\})$", re.MULTILINE)


@dataclass
class WrkResult:
    """One wrk run.

    Attributes:
        concurrency: int, connections (one request in flight each).
        elapsed_s: float, wrk's measured duration.
        ok: int, 2xx replies.
        failed: dict[str, int], ``"non-2xx"`` and wrk's socket error kinds -> count (zeros left out).
        pct_us: dict[float, float], latency percentile -> microseconds (50, 90, 95, 99, 99.9).
        cpu_s: float, wrk's own user+sys CPU seconds.
    """

    concurrency: int
    elapsed_s: float
    ok: int
    failed: dict[str, int] = field(default_factory=dict)
    pct_us: dict[float, float] = field(default_factory=dict)
    cpu_s: float = 0.0

    @property
    def rate(self) -> float:
        """2xx replies per second."""
        return self.ok / self.elapsed_s if self.elapsed_s else 0.0

    def pct_ms(self, p: float) -> float:
        """Latency percentile in milliseconds (one of ``pct_us``'s; NaN for another)."""
        us = self.pct_us.get(float(p))
        return us / 1000 if us is not None else float("nan")


def ensure_wrk(install: bool = True) -> tuple[str | None, str]:
    """The ``wrk`` executable, installed with apt-get when missing and allowed; or (None, why not).

    Side effects: may run ``apt-get install -y wrk`` (as root only, ``install`` true; up to 5 minutes).
    """
    exe = shutil.which("wrk")
    if exe is not None:
        return exe, ""
    apt = shutil.which("apt-get")
    if not install or apt is None or os.geteuid() != 0:
        return None, "skipped: wrk is not installed (`apt-get install -y wrk`); the Python generator ran instead"
    r = subprocess.run([apt, "install", "-y", WRK_PACKAGE], capture_output=True, timeout=300, check=False)
    exe = shutil.which("wrk")
    if r.returncode != 0 or exe is None:
        tail = r.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return None, f"skipped: apt-get install wrk failed ({tail[0]}); the Python generator ran instead"
    return exe, ""


def parse_output(out: bytes, concurrency: int, cpu_s: float) -> WrkResult:
    """The ``WrkResult`` of wrk's standard output (the ``WRKJSON`` line ``hookwrk.lua``'s ``done`` prints).

    Raises:
        RuntimeError: no such line (wrk failed before the end: its output is in the message).
    """
    m = _LINE.search(out)
    if m is None:
        raise RuntimeError(f"wrk gave no summary: {out.decode(errors='replace')[-400:]}")
    s = orjson.loads(m.group(1))
    errors = {"non-2xx": s["status"], **{k: s[k] for k in ("connect", "read", "write", "timeout")}}
    return WrkResult(
        concurrency=concurrency,
        elapsed_s=s["duration_us"] / 1e6,
        ok=s["requests"] - s["status"],
        failed={k: v for k, v in errors.items() if v},
        pct_us={float(k): float(v) for k, v in s["pct_us"].items()},
        cpu_s=cpu_s,
    )


def run_wrk(exe: str, url: str, concurrency: int, duration_s: float, run: str = "r") -> WrkResult:
    """Load ``url``'s ``/hooks`` from ``concurrency`` connections for ``duration_s`` seconds (one wrk thread).

    ``run`` makes this run's ``tool_use_id`` values unique against earlier runs on the same database.

    Raises:
        RuntimeError: wrk exited non-zero or printed no summary.
    """
    argv = [exe, "-t1", f"-c{concurrency}", f"-d{max(1, round(duration_s))}s", "--timeout", "30s"]
    argv += ["-s", str(LUA), url.rstrip("/"), "--", run]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    with proc.stdout:
        out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"wrk exited {proc.returncode}: {out.decode(errors='replace')[-400:]}")
    return parse_output(out, concurrency, ru.ru_utime + ru.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description="POST hook deliveries to a running ingestd serve with wrk")
    ap.add_argument("--url", required=True)
    ap.add_argument("-c", "--concurrency", type=int, default=16)
    ap.add_argument("-d", "--duration-s", type=float, default=5.0)
    args = ap.parse_args()
    exe, why = ensure_wrk(install=False)
    if exe is None:
        raise SystemExit(why)
    r = run_wrk(exe, args.url, args.concurrency, args.duration_s, run=str(time.time_ns()))
    print(
        f"c={r.concurrency} ok={r.ok} failed={r.failed} {r.rate:,.0f}/s p50={r.pct_ms(50):.2f}ms "
        f"p99={r.pct_ms(99):.2f}ms wrk CPU {r.cpu_s / r.elapsed_s:.0%} ({r.cpu_s / max(1, r.ok) * 1000:.3f} ms/event)"
    )


if __name__ == "__main__":
    main()
