"""Hook latency while the tailer catches up a large tree on a CPU-bound machine.

The daemon's tailer read at nice 10 and also ran its write transactions there: when processes at
normal priority kept the cores busy, a transaction crawled while holding SQLite's write lock and
the hook writer waited behind it until the hooks were answered 503 (``hook_timeout_ms``, 2 s).

Each run: a fresh ``ingestd serve`` (from a tree's ``.venv``) on an empty projects root, a client
POSTing a hook every ``--interval-ms`` over one keep-alive connection, then ``--hogs`` busy loops
at nice 0 and a copy of the corpus's projects tree into the root; the run ends once the tailer
has a checkpoint for every file (or at ``--max-s``). Reported per tree: max and p99 hook latency,
the hooks not answered 2xx, the catch-up's wall time and the daemon's CPU (user+sys, its main
process). The daemon and the hogs share this process's session (one autogroup: nice values weigh
against each other). Trees alternate in order per round, so another helper's load falls on both. Run::

    python -m bench.prio --src main=/work/main --src branch=. --rounds 3 --out /tmp/prio.md

``make bench`` runs it on this tree alone over the 1 GB corpus and writes its section of
``BENCHMARKS.md`` (``--section``), judged by SPEC §11's target (p99 < ``P99_TARGET_MS``).
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from bench.daemon import daemon_cpu_s, free_port, stop_daemon, wait_listening
from bench.hookload import hook_body
from bench.stats import percentile
from bench.table import marked_section, write_marked

HOG = "while 1: pass"
P99_TARGET_MS = 100.0  # SPEC §11: a hook's p99 while a 1 GB catch-up runs beside two busy processes
BEGIN = "<!-- prio: written by `python -m bench.prio --section`; kept by bench.run -->"
END = "<!-- /prio -->"
SLOW_MS = 500.0  # a hook answered later than this is counted (a quarter of the 2 s hook timeout)


@dataclass(frozen=True, slots=True)
class Run:
    """One run of one tree: latencies in ms, the hooks not answered 2xx, catch-up seconds, daemon CPU s."""

    src: str
    max_ms: float
    p99_ms: float
    hooks: int
    failed: int
    slow: int
    catchup_s: float
    cpu_s: float


class Client(threading.Thread):
    """POSTs a hook every ``interval_s`` until stopped; records (latency ms, status) per hook."""

    def __init__(self, port: int, interval_s: float, run: str) -> None:
        super().__init__(daemon=True)
        self.port, self.interval_s, self.run_id = port, interval_s, run
        self.stop = threading.Event()
        self.results: list[tuple[float, int]] = []

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        n = 0
        while not self.stop.is_set():
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/hooks", hook_body(n, self.run_id), {"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                status = resp.status
            except OSError:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                status = 0
            self.results.append(((time.perf_counter() - t0) * 1000, status))
            n += 1
            self.stop.wait(max(0.0, self.interval_s - (time.perf_counter() - t0)))
        conn.close()


def _files(tree: Path) -> int:
    """The transcript files under a projects tree (one checkpoint each once caught up)."""
    return sum(1 for p in tree.rglob("*") if p.is_file() and p.name.endswith((".jsonl", ".meta.json")))


def _checkpoints(db: Path) -> int:
    try:
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        conn.setbusytimeout(1000)
        try:
            n: Any = conn.execute("SELECT count(*) FROM ingest_checkpoints WHERE size >= 0").fetchall()[0][0]
            return int(n)
        finally:
            conn.close()
    except apsw.Error:
        return 0


def one_run(src: str, tree: Path, corpus: Path, hogs: int, interval_s: float, max_s: float) -> Run:
    """One daemon of ``tree`` catching up ``corpus`` under ``hogs`` busy loops and a hook every ``interval_s``."""
    with tempfile.TemporaryDirectory(prefix="prio-") as tmp:
        work = Path(tmp)
        root, db, port, log = work / "projects", work / "d.db", free_port(), work / "d.log"
        root.mkdir()
        argv = [str(tree / ".venv/bin/ingestd"), "serve", "--db", str(db), "--projects", str(root)]
        argv += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
        with open(log, "wb") as err:
            # in this session, as the hogs are: with autogroups (``kernel.sched_autogroup_enabled``) a
            # nice value only weighs against the threads of its own session, and a daemon in a session
            # of its own would get its share whatever its threads' nice values (no inversion shown)
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=tree)
        hog_procs: list[subprocess.Popen[bytes]] = []
        client = Client(port, interval_s, f"{src}{time.time_ns()}")
        try:
            wait_listening(proc, port, log, 30.0)
            client.start()
            time.sleep(1.0)
            hog_procs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(hogs)]
            cpu0, t0 = daemon_cpu_s(proc.pid), time.monotonic()
            shutil.copytree(corpus / "projects", root, dirs_exist_ok=True)
            want = _files(root)
            while _checkpoints(db) < want and time.monotonic() - t0 < max_s:
                time.sleep(0.25)
            catchup, cpu = time.monotonic() - t0, daemon_cpu_s(proc.pid) - cpu0
        finally:
            client.stop.set()
            client.join()
            for h in hog_procs:
                h.kill()
                h.wait()
            stop_daemon(proc, timeout_s=20)
    lat = [ms for ms, _ in client.results]
    failed = sum(1 for _, st in client.results if not 200 <= st < 300)
    slow = sum(1 for ms in lat if ms > SLOW_MS)
    return Run(src, max(lat), percentile(lat, 99), len(lat), failed, slow, catchup, cpu)


def _table(runs: list[Run], srcs: list[str]) -> str:
    head = "| tree | max ms | p99 ms | hooks | not 2xx (sum) | > 500 ms (sum) | catch-up s | daemon CPU s |"
    out = [head, "|---" * 8 + "|"]
    for s in srcs:
        rs = [r for r in runs if r.src == s]

        def med(f: str, rs: list[Run] = rs) -> float:
            return float(statistics.median(getattr(r, f) for r in rs))

        out.append(
            f"| {s} | {med('max_ms'):.0f} | {med('p99_ms'):.0f} | {med('hooks'):.0f} | {sum(r.failed for r in rs)}"
            f" | {sum(r.slow for r in rs)}"
            f" | {med('catchup_s'):.1f} | {med('cpu_s'):.1f} |"
        )
    return "\n".join(out)


def render_section(runs: list[Run], corpus: Path, hogs: int, interval_ms: float, command: str, load: str) -> str:
    """The ``BENCHMARKS.md`` section: each tree's medians against the target, and every run."""
    srcs = list(dict.fromkeys(r.src for r in runs))
    lines = [
        BEGIN,
        "## Hooks during a catch-up (SPEC §11)",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `{command}`: a fresh `ingestd serve`"
        f" on an empty projects root, one client POSTing a hook every {interval_ms:g} ms, then {hogs} busy"
        f" loops at nice 0 and a copy of {corpus.name}'s projects tree into the root; each run ends when the"
        f" tailer has a checkpoint for every file. Load average: {load}.",
        "",
        _table(runs, srcs),
        "",
        "| tree | hook p99 during the catch-up | target | verdict |",
        "|---|---|---|---|",
    ]
    for src in srcs:
        p99 = statistics.median(r.p99_ms for r in runs if r.src == src)
        verdict = "meets" if p99 < P99_TARGET_MS else "**misses**"
        lines.append(f"| {src} | {p99:.0f} ms | < {P99_TARGET_MS:.0f} ms | {verdict} |")
    lines += ["", *(f"- {r}" for r in runs), END]
    return "\n".join(lines) + "\n"


def section_of(text: str) -> str:
    """The section of a BENCHMARKS.md text ("" when it has none): ``bench.run`` keeps it."""
    return marked_section(text, BEGIN, END)


def main() -> None:
    """Parse the arguments, run the rounds interleaved, print (and write) the medians."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", action="append", required=True, help="NAME=TREE (a tree with .venv/bin/ingestd)")
    ap.add_argument("--corpus", type=Path, default=Path("bench/cache/c100"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--interval-ms", type=float, default=20.0)
    ap.add_argument("--max-s", type=float, default=180.0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--section", type=Path, help="write the table as its section of this BENCHMARKS.md")
    a = ap.parse_args()
    srcs = [tuple(s.split("=", 1)) for s in a.src]
    runs: list[Run] = []
    load = os.getloadavg()
    for i in range(a.rounds):
        for name, tree in srcs if i % 2 == 0 else srcs[::-1]:
            r = one_run(name, Path(tree).resolve(), a.corpus.resolve(), a.hogs, a.interval_ms / 1000, a.max_s)
            print(r, flush=True)
            runs.append(r)
    text = f"{_table(runs, [s[0] for s in srcs])}\n\nmedians of {a.rounds} rounds; load at start {load}"
    text += f"; hogs {a.hogs}\n"
    for r in runs:
        text += f"- {r}\n"
    print(text)
    if a.out:
        a.out.write_text(text)
    if a.section:
        command = "python -m bench.prio " + " ".join(sys.argv[1:])
        loads = " -> ".join(" / ".join(f"{x:.2f}" for x in la) for la in (load, os.getloadavg()))
        section = render_section(runs, a.corpus, a.hogs, a.interval_ms, command, loads)
        write_marked(a.section, section, BEGIN, END)


if __name__ == "__main__":
    main()
