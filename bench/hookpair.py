"""Hook load on several source trees, interleaved in one run: medians, ratios and CPU per process.

The load comes from ``wrk`` (``bench.hookwrk``: native, about 0.02 ms of CPU per request) when it is
installed, else from ``bench.hookload`` (Python, about 0.25 ms per request, a third of this machine
at 2,000 ev/s); ``--gen`` picks one or both (each is a column of its own). CPU is per event, split
into the daemon's main process (HTTP), its writer process (and any other descendant) and the load
generator. Each (round, concurrency, generator, tree) gets a fresh database and a fresh
``ingestd serve --no-tail`` from that tree's ``.venv``, so a session that grows over the run (and
another helper's load) falls on every tree alike; the order of the trees alternates per round. Run::

    python -m bench.hookpair --src main=/work/main --src branch=. -c 1 -c 16 -c 64 --rounds 3 -n 3000

(``-n`` bounds the Python generator's requests; ``--max-s`` is wrk's duration and the Python
generator's time limit.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import orjson

from bench.daemon import daemon_cpu_s, free_port, stop_daemon, wait_listening
from bench.hookload import run_load
from bench.hookwrk import ensure_wrk, run_wrk


@dataclass(frozen=True, slots=True)
class Run:
    """One load run against one tree: rate in 2xx/s, latencies in ms, CPU as fractions of a core."""

    src: str
    gen: str
    conc: int
    rate: float
    p50_ms: float
    p99_ms: float
    main_cpu: float
    writer_cpu: float
    client_cpu: float
    failed: int
    group: float  # deliveries per committed transaction (NaN when the daemon did not say)

    @property
    def daemon_cpu(self) -> float:
        """The daemon's main process and its writer process, fractions of a core."""
        return self.main_cpu + self.writer_cpu

    def ms_per_event(self, cpu: float) -> float:
        """``cpu`` (fraction of a core) as milliseconds of CPU per 2xx event."""
        return cpu / self.rate * 1000 if self.rate else float("nan")


def _start(tree: Path, db: Path, port: int, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    argv = [str(tree / ".venv/bin/ingestd"), "serve", "--db", str(db), "--no-tail"]
    # info: one line at the end gives the group sizes (``writer_stopped``); nothing is logged per request
    argv += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "info"]
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=err, cwd=tree, start_new_session=True, env={**os.environ, **env}
        )
    try:
        wait_listening(proc, port, log, 30.0)
    except BaseException:  # not listening, or Ctrl-C: the daemon is in its own session, stop it here
        stop_daemon(proc, timeout_s=5)
        raise
    return proc


def _tree_cpu_s(pid: int) -> tuple[float, float]:
    """User+sys CPU seconds of ``pid`` itself, and of every live descendant (a writer process, its forkserver)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0.0, list(children.get(pid, []))
    while todo:
        p = todo.pop()
        total += daemon_cpu_s(p)
        todo += children.get(p, [])
    return daemon_cpu_s(pid), total


def commit_latency_ms(directory: Path, commits: int = 100) -> tuple[float, float]:
    """(p50, p90) wall milliseconds of a one-row ``COMMIT`` in WAL mode with synchronous=FULL, in
    ``directory``: the floor under every durable hook's latency, and with at most one commit in
    flight, ``clients / p50`` bounds the rate whatever the CPU. Side effect: a scratch database there."""
    conn = apsw.Connection(str(directory / "fsync-probe.db"))
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE IF NOT EXISTS t (x BLOB)")
        walls = []
        for _ in range(commits):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t VALUES (randomblob(400))")
            t0 = time.perf_counter()
            conn.execute("COMMIT")
            walls.append((time.perf_counter() - t0) * 1000)
    finally:
        conn.close()
    walls.sort()
    return walls[len(walls) // 2], walls[len(walls) * 9 // 10]


def _client_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _load(gen: str, url: str, conc: int, requests: int, max_s: float) -> tuple[float, float, float, float, int]:
    """One load run: (2xx/s, p50 ms, p99 ms, the generator's CPU seconds, failed requests)."""
    run = str(time.time_ns())
    if gen == "wrk":
        exe, why = ensure_wrk(install=False)
        if exe is None:
            raise RuntimeError(why)
        w = run_wrk(exe, url, conc, max_s, run=run)
        return w.rate, w.pct_ms(50), w.pct_ms(99), w.cpu_s, sum(w.failed.values())
    c0 = _client_cpu_s()
    r = asyncio.run(run_load(url, conc, requests, max_s, run=run))
    return r.rate, r.pct_ms(50), r.pct_ms(99), _client_cpu_s() - c0, sum(r.failed.values())


def one_run(src: str, tree: Path, gen: str, conc: int, requests: int, max_s: float, env: dict[str, str]) -> Run:
    """Start a daemon of ``tree`` on a fresh database, load it with ``gen`` (wrk or python), stop it."""
    with tempfile.TemporaryDirectory(prefix="hookpair-") as d:
        port = free_port()
        proc = _start(tree, Path(d) / "h.db", port, Path(d) / "serve.log", env)
        try:
            time.sleep(1.0)  # start-up checks and the writer process settle
            (m0, k0), w0 = _tree_cpu_s(proc.pid), time.perf_counter()
            rate, p50, p99, client_s, failed = _load(gen, f"http://127.0.0.1:{port}", conc, requests, max_s)
            wall = time.perf_counter() - w0
            m1, k1 = _tree_cpu_s(proc.pid)
        finally:
            stop_daemon(proc, timeout_s=30)
        group = _group_size(Path(d) / "serve.log")
    return Run(src, gen, conc, rate, p50, p99, (m1 - m0) / wall, (k1 - k0) / wall, client_s / wall, failed, group)


def _group_size(log: Path) -> float:
    """``deliveries_per_commit`` of the daemon's ``writer_stopped`` line, NaN without one."""
    for line in reversed(log.read_bytes().splitlines()):
        if b"writer_stopped" in line:
            try:
                return float(orjson.loads(line)["deliveries_per_commit"])
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                break
    return float("nan")


def _row(rs: list[Run], base: float | None) -> str:
    rate = statistics.median(r.rate for r in rs)
    each = ", ".join(f"{r.rate:,.0f}" for r in rs)

    def med(f: Any) -> float:
        return float(statistics.median(f(r) for r in rs))

    return (
        f"{rate:,.0f} ({each}) | {med(lambda r: r.p50_ms):.2f} | {med(lambda r: r.p99_ms):.2f} | "
        f"{med(lambda r: r.daemon_cpu):.0%} | {med(lambda r: r.ms_per_event(r.main_cpu)):.3f} | "
        f"{med(lambda r: r.ms_per_event(r.writer_cpu)):.3f} | {med(lambda r: r.ms_per_event(r.client_cpu)):.3f} | "
        f"{med(lambda r: r.group):.1f} | {sum(r.failed for r in rs)} | {rate / (base or rate):.2f} |"
    )


def _table(runs: list[Run], srcs: list[str], gens: list[str], concs: list[int]) -> str:
    lines = [
        "| clients | generator | tree | ev/s (median, runs) | p50 ms | p99 ms | daemon CPU | main ms/event "
        "| writer ms/event | generator ms/event | rows/commit | failed | ev/s ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in concs:
        for g in gens:
            base = None
            for s in srcs:
                rs = [r for r in runs if r.src == s and r.conc == c and r.gen == g]
                if rs:
                    lines.append(f"| {c} | {g} | {s} | " + _row(rs, base))
                    base = statistics.median(r.rate for r in rs) if base is None else base
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--src", action="append", required=True, help="NAME=DIR[@VAR=VALUE,...] (a tree with .venv/bin/ingestd)"
    )
    ap.add_argument("-c", "--concurrency", type=int, action="append", required=True)
    ap.add_argument(
        "--gen", action="append", choices=["wrk", "python"], help="default: wrk when installed, else python"
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", "--requests", type=int, default=3000)
    ap.add_argument("--max-s", type=float, default=10.0)
    args = ap.parse_args()
    gens = args.gen or (["wrk"] if ensure_wrk(install=False)[0] else ["python"])
    srcs = [tuple(s.split("=", 1)) for s in args.src]
    runs: list[Run] = []
    for rnd in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="hookpair-fsync-") as d:
            p50, p90 = commit_latency_ms(Path(d))
        print(f"round {rnd + 1}: a one-row durable COMMIT here takes p50 {p50:.2f} ms, p90 {p90:.2f} ms", flush=True)
        order = srcs if rnd % 2 == 0 else srcs[::-1]
        for c in args.concurrency:
            for g in gens:
                for name, tree in order:
                    where, _, assigns = tree.partition("@")
                    env = dict(a.split("=", 1) for a in assigns.split(",") if a)
                    r = one_run(name, Path(where).resolve(), g, c, args.requests, args.max_s, env)
                    runs.append(r)
                    print(
                        f"round {rnd + 1} c={c} {g} {name}: {r.rate:,.0f}/s p50={r.p50_ms:.2f} p99={r.p99_ms:.2f} "
                        f"main={r.main_cpu:.0%} writer={r.writer_cpu:.0%} client={r.client_cpu:.0%} "
                        f"group={r.group:.1f} failed={r.failed}",
                        flush=True,
                    )
    print(f"load average: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(_table(runs, [s[0] for s in srcs], gens, args.concurrency))


if __name__ == "__main__":
    main()
