"""Hook receiver load generator: N concurrent aiohttp clients POSTing hook bodies to ``/hooks``.

Bounded by a request count and a time limit, loopback only. Every body is a distinct, valid delivery
(``PreToolUse`` with a unique ``tool_use_id``) so nothing is de-duplicated away. Run standalone::

    python -m bench.hookload --url http://127.0.0.1:7391 -c 16 -n 20000
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from dataclasses import dataclass, field

import aiohttp
import orjson

from bench.stats import percentile

SESSIONS = [f"b0000000-0000-4000-8000-{i:012d}" for i in range(8)]


def hook_body(n: int, run: str) -> bytes:
    """The ``n``-th delivery of a load run: a PreToolUse in one of a few sessions, unique by ``tool_use_id``."""
    sid = SESSIONS[n % len(SESSIONS)]
    return orjson.dumps(
        {
            "session_id": sid,
            "transcript_path": f"/home/bench/.claude/projects/-home-bench/{sid}.jsonl",
            "cwd": "/home/bench/project",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {n}", "description": "bench"},
            "tool_use_id": f"toolu_bench_{run}_{n:09d}",
        }
    )


@dataclass
class LoadResult:
    """One load run.

    Attributes:
        concurrency: int, clients.
        latencies_s: list[float], per successful (2xx) request, seconds.
        elapsed_s: float, first request sent to last reply received.
        ok: int, 2xx replies.
        failed: dict[str, int], non-2xx status or exception name -> count.
    """

    concurrency: int
    latencies_s: list[float] = field(default_factory=list)
    elapsed_s: float = 0.0
    ok: int = 0
    failed: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        """2xx replies per second."""
        return self.ok / self.elapsed_s if self.elapsed_s else 0.0

    def pct_ms(self, p: float) -> float:
        """Latency percentile in milliseconds."""
        return percentile(self.latencies_s, p) * 1000 if self.latencies_s else float("nan")


async def run_load(url: str, concurrency: int, requests: int, max_s: float, run: str = "r") -> LoadResult:
    """POST ``requests`` deliveries from ``concurrency`` clients, stopping early after ``max_s`` seconds."""
    res = LoadResult(concurrency)
    counter = itertools.count()
    endpoint = url.rstrip("/") + "/hooks"
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as session:
        start = time.perf_counter()
        deadline = start + max_s

        async def client() -> None:
            while True:
                n = next(counter)
                if n >= requests or time.perf_counter() > deadline:
                    return
                body = hook_body(n, run)
                t0 = time.perf_counter()
                try:
                    async with session.post(endpoint, data=body, headers=headers) as resp:
                        await resp.read()
                        status = resp.status
                except (aiohttp.ClientError, TimeoutError) as e:
                    res.failed[type(e).__name__] = res.failed.get(type(e).__name__, 0) + 1
                    continue
                if 200 <= status < 300:
                    res.latencies_s.append(time.perf_counter() - t0)
                    res.ok += 1
                else:
                    res.failed[str(status)] = res.failed.get(str(status), 0) + 1

        await asyncio.gather(*(client() for _ in range(concurrency)))
        res.elapsed_s = time.perf_counter() - start
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description="POST hook deliveries to a running ingestd serve")
    ap.add_argument("--url", required=True)
    ap.add_argument("-c", "--concurrency", type=int, default=16)
    ap.add_argument("-n", "--requests", type=int, default=10000)
    ap.add_argument("--max-s", type=float, default=30.0)
    args = ap.parse_args()
    r = asyncio.run(run_load(args.url, args.concurrency, args.requests, args.max_s, run=str(time.time_ns())))
    print(
        f"c={r.concurrency} ok={r.ok} failed={r.failed} {r.rate:,.0f}/s "
        f"p50={r.pct_ms(50):.2f}ms p95={r.pct_ms(95):.2f}ms p99={r.pct_ms(99):.2f}ms"
    )


if __name__ == "__main__":
    main()
