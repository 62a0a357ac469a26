"""Hook load on several source trees, interleaved in one run: medians, ratios and daemon CPU.

Each (round, concurrency, tree) gets a fresh database and a fresh ``ingestd serve --no-tail`` from that
tree's ``.venv``, so a session that grows over the run (and another helper's load) falls on every tree
alike; the order of the trees alternates per round. Run::

    python -m bench.hookpair --src main=/work/main --src branch=. -c 1 -c 16 -c 64 --rounds 3 -n 3000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.daemon import daemon_cpu_s, free_port, stop_daemon
from bench.hookload import run_load


@dataclass(frozen=True, slots=True)
class Run:
    """One load run against one tree: rate in 2xx/s, latencies in ms, CPU as fractions of a core."""

    src: str
    conc: int
    rate: float
    p50_ms: float
    p99_ms: float
    daemon_cpu: float
    client_cpu: float
    failed: int


def _start(tree: Path, db: Path, port: int, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    argv = [str(tree / ".venv/bin/ingestd"), "serve", "--db", str(db), "--no-tail"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=err, cwd=tree, start_new_session=True, env={**os.environ, **env}
        )
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{tree}: serve exited {proc.returncode}: {log.read_text()[-400:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("not listening") from None
            time.sleep(0.05)


def _tree_cpu_s(pid: int) -> float:
    """User+sys CPU seconds of ``pid`` and every live descendant (a writer process, its forkserver)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += daemon_cpu_s(p)
        todo += children.get(p, [])
    return total


def _client_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def one_run(src: str, tree: Path, conc: int, requests: int, max_s: float, env: dict[str, str]) -> Run:
    """Start a daemon of ``tree`` on a fresh database, load it, stop it."""
    with tempfile.TemporaryDirectory(prefix="hookpair-") as d:
        port = free_port()
        proc = _start(tree, Path(d) / "h.db", port, Path(d) / "serve.log", env)
        try:
            time.sleep(1.0)  # start-up checks and the writer process settle
            d0, c0, w0 = _tree_cpu_s(proc.pid), _client_cpu_s(), time.perf_counter()
            res = asyncio.run(run_load(f"http://127.0.0.1:{port}", conc, requests, max_s, run=str(time.time_ns())))
            wall = time.perf_counter() - w0
            d1, c1 = _tree_cpu_s(proc.pid), _client_cpu_s()
        finally:
            stop_daemon(proc, timeout_s=30)
    return Run(
        src,
        conc,
        res.rate,
        res.pct_ms(50),
        res.pct_ms(99),
        (d1 - d0) / wall,
        (c1 - c0) / wall,
        sum(res.failed.values()),
    )


def _table(runs: list[Run], srcs: list[str], concs: list[int]) -> str:
    lines = [
        "| clients | tree | ev/s (median, runs) | p50 ms | p99 ms | daemon CPU | daemon CPU ms/event | client CPU "
        "| failed | ev/s ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in concs:
        base = None
        for s in srcs:
            rs = [r for r in runs if r.src == s and r.conc == c]
            if not rs:
                continue
            rate = statistics.median(r.rate for r in rs)
            base = rate if base is None else base
            each = ", ".join(f"{r.rate:,.0f}" for r in rs)
            lines.append(
                f"| {c} | {s} | {rate:,.0f} ({each}) | {statistics.median(r.p50_ms for r in rs):.2f} | "
                f"{statistics.median(r.p99_ms for r in rs):.2f} | "
                f"{statistics.median(r.daemon_cpu for r in rs):.0%} | "
                f"{statistics.median(r.daemon_cpu / r.rate * 1000 for r in rs if r.rate):.3f} | "
                f"{statistics.median(r.client_cpu for r in rs):.0%} | {sum(r.failed for r in rs)} | "
                f"{rate / base:.2f} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--src", action="append", required=True, help="NAME=DIR[@VAR=VALUE,...] (a tree with .venv/bin/ingestd)"
    )
    ap.add_argument("-c", "--concurrency", type=int, action="append", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", "--requests", type=int, default=3000)
    ap.add_argument("--max-s", type=float, default=10.0)
    args = ap.parse_args()
    srcs = [tuple(s.split("=", 1)) for s in args.src]
    runs: list[Run] = []
    for rnd in range(args.rounds):
        order = srcs if rnd % 2 == 0 else srcs[::-1]
        for c in args.concurrency:
            for name, tree in order:
                where, _, assigns = tree.partition("@")
                env = dict(a.split("=", 1) for a in assigns.split(",") if a)
                r = one_run(name, Path(where).resolve(), c, args.requests, args.max_s, env)
                runs.append(r)
                print(
                    f"round {rnd + 1} c={c} {name}: {r.rate:,.0f}/s p50={r.p50_ms:.2f} p99={r.p99_ms:.2f} "
                    f"daemon={r.daemon_cpu:.0%} client={r.client_cpu:.0%} failed={r.failed}",
                    flush=True,
                )
    print(f"load average: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(_table(runs, [s[0] for s in srcs], args.concurrency))


if __name__ == "__main__":
    main()
