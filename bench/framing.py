"""``python -m bench.framing``: framing is linear and memory bounded on any file (SPEC §11, §12).

Measures, with the real ``ingestd`` commands on files in the page cache:

- ``ingestd ingest`` of one file of zeros with no newline (a sparse file, as ``truncate -s``
  makes): 64 MB and 512 MB, seconds per MB (the same within 1.5x: one pass, not quadratic) and
  peak RSS; then 2 GB, peak RSS (under 300 MB);
- ``ingestd ingest`` of one real 1 GB JSON line (an oversized marker: peak RSS);
- a daemon tailing a root where a 2 GB file of zeros appears (``truncate -s 2G``): hook latency
  while it reads (p50 / p99 of 2xx-after-commit POSTs), the daemon's peak RSS, and how long
  SIGTERM takes to end it.

Writes its section of ``BENCHMARKS.md`` (between the ``framing`` markers, the rest of the file
kept), so ``make bench`` runs it after ``bench.run``.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from bench.daemon import free_port
from bench.hookload import hook_body
from bench.proc import REPO, _tree_rss_bytes, ingestd_exe, run_measured
from bench.stats import percentile
from bench.table import marked_section, write_marked

MB = 1_000_000
MIB = 1 << 20
SID = "f0000000-0000-4000-8000-000000000001"
BEGIN = "<!-- framing: written by `python -m bench.framing`; kept by bench.run -->"
END = "<!-- /framing -->"


@dataclass
class IngestFigure:
    """One ``ingestd ingest`` of a single odd file: what, seconds, peak RSS (MiB), lines logged."""

    what: str
    size_bytes: int
    wall_s: float
    cpu_s: float
    maxrss_mb: float
    oversized: int


@dataclass
class DaemonFigure:
    """A daemon tailing a root where a huge file without newlines appears."""

    size_bytes: int
    hooks: int = 0
    failed: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    sigterm_s: float = 0.0
    exit_code: int | None = None


def _empty_config(work: Path) -> Path:
    """An empty config file: the user's own stays out of the measurement (a named file must exist)."""
    path = work / "none.toml"
    path.touch(mode=0o600)
    return path


def _ingest(work: Path, name: str, make: object, size: int) -> IngestFigure:
    root = work / f"root-{name}"
    (root / "-p").mkdir(parents=True)
    path = root / "-p" / f"{SID}.jsonl"
    make(path, size)  # type: ignore[operator]
    db = work / f"{name}.db"
    env = {**os.environ, "INGESTD_CONFIG": str(_empty_config(work))}
    res = run_measured(
        [ingestd_exe(), "ingest", "--db", str(db), "--projects", str(root), "--json"], timeout_s=1800, env=env
    )
    if res.returncode != 0:
        raise RuntimeError(f"ingest {name} failed: {res.stderr[-500:]!r}")
    doc = orjson.loads(res.stdout)
    path.unlink()
    db.unlink()
    return IngestFigure(name, size, res.wall_s, res.cpu_s, res.maxrss_mb, int(doc["oversized"]))


def sparse_zeros(path: Path, size: int) -> None:
    """A file of ``size`` zero bytes and no newline (``truncate -s``)."""
    with open(path, "wb") as f:
        f.truncate(size)


def one_json_line(path: Path, size: int) -> None:
    """One assistant record of about ``size`` bytes (its text is the bulk), with its newline."""
    head = orjson.dumps(
        {
            "type": "assistant",
            "sessionId": SID,
            "uuid": "big",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {
                "id": "msg_big",
                "model": "claude-opus-4-6",
                "role": "assistant",
                "content": [{"type": "text", "text": "@"}],
            },
        }
    )
    pre, post = head.split(b"@")
    fill = size - len(head)
    block = b"x" * (8 * MIB)
    with open(path, "wb") as f:
        f.write(pre)
        while fill > 0:
            f.write(block[: min(fill, len(block))])
            fill -= len(block)
        f.write(post + b"\n")


def daemon_on_endless_file(work: Path, size: int, *, hooks_s: float = 6.0) -> DaemonFigure:
    """Start ``ingestd serve`` on an empty root, ``truncate -s SIZE`` a transcript in it, post hooks
    while the tailer reads it, then SIGTERM. Read-only apart from ``work``."""
    root = work / "live"
    (root / "-p").mkdir(parents=True)
    port = free_port()
    db = work / "live.db"
    log = work / "live.log"
    env = {**os.environ, "INGESTD_CONFIG": str(_empty_config(work)), "INGESTD_SCHEDULE_ENABLED": "false"}
    argv = [ingestd_exe(), "serve", "--db", str(db), "--projects", str(root), "--port", str(port)]
    argv += ["--log-level", "warning", "--rescan-interval-s", "1"]
    with open(log, "wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO, env=env)
    fig = DaemonFigure(size)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                c.request("GET", "/api/health")
                c.getresponse().read()
                c.close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"daemon did not start: {log.read_text()[-500:]}") from None
                time.sleep(0.05)
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.05):
                fig.peak_rss_mb = max(fig.peak_rss_mb, _tree_rss_bytes(proc.pid) / MIB)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        if size:  # size 0 is the baseline: the same daemon and hooks, no file
            sparse_zeros(root / "-p" / f"{SID}.jsonl", size)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        end = time.monotonic() + hooks_s
        n = 0
        while time.monotonic() < end:
            body = hook_body(n, "framing")
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/hooks", body=body, headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                ok = resp.status == 200
            except OSError:
                ok = False
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            fig.latencies_ms.append((time.perf_counter() - t0) * 1000)
            fig.hooks += 1
            fig.failed += 0 if ok else 1
            n += 1
            time.sleep(0.01)
        conn.close()
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        fig.exit_code = proc.wait(timeout=60)
        fig.sigterm_s = time.perf_counter() - t0
        stop.set()
        sampler.join()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return fig


def measure(
    work: Path, *, big: int = 2000 * MB, line: int = 1000 * MB
) -> tuple[list[IngestFigure], DaemonFigure, DaemonFigure]:
    """Every figure of the module docstring, plus the baselines they are read against: an ingest
    of an empty file (start-up), and the daemon answering hooks with no such file."""
    figs = [
        _ingest(work, "empty", sparse_zeros, 0),
        _ingest(work, "zeros-64MB", sparse_zeros, 64 * MB),
        _ingest(work, "zeros-512MB", sparse_zeros, 512 * MB),
        _ingest(work, f"zeros-{big // MB}MB", sparse_zeros, big),
        _ingest(work, f"json-line-{line // MB}MB", one_json_line, line),
    ]
    base = daemon_on_endless_file(work / "base", 0)
    return figs, base, daemon_on_endless_file(work / "big", big)


def _v(ok: bool) -> str:
    return "meets" if ok else "**misses**"


def _lat(d: DaemonFigure) -> str:
    p50 = percentile(d.latencies_ms, 50) if d.latencies_ms else float("nan")
    p99 = percentile(d.latencies_ms, 99) if d.latencies_ms else float("nan")
    return f"{d.hooks} POSTs, {d.failed} failed; p50 {p50:.1f} ms / p99 {p99:.1f} ms"


def render(figs: list[IngestFigure], base: DaemonFigure, d: DaemonFigure) -> str:
    """The BENCHMARKS.md section (per-MB figures net of the empty file's start-up)."""
    by = {f.what: f for f in figs}
    empty, small, large = by["empty"], by["zeros-64MB"], by["zeros-512MB"]
    per_small = (small.wall_s - empty.wall_s) / (small.size_bytes / MB) * 1000
    per_large = (large.wall_s - empty.wall_s) / (large.size_bytes / MB) * 1000
    ratio = per_large / per_small
    lines = [
        BEGIN,
        "## Framing and memory (SPEC §12)",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `python -m bench.framing` on this machine "
        "(files in the page cache; sparse files of zeros as `truncate -s` makes them). "
        "`max_line_bytes` is the default 64 MiB. Load average at the end (1/5/15 min): "
        + " / ".join(f"{x:.2f}" for x in os.getloadavg())
        + " on this shared 2-core machine: the hook latencies are read against the baseline row.",
        "",
        "| measurement | figure | target | verdict |",
        "|---|---|---|---|",
        f"| `ingestd ingest`, an empty file (start-up, subtracted below) | {empty.wall_s:.2f} s wall | | |",
        f"| `ingestd ingest`, 64 MB of zeros, no newline | {small.wall_s:.2f} s wall ({per_small:.2f} ms/MB), "
        f"{small.cpu_s:.2f} s CPU, peak {small.maxrss_mb:.0f} MiB | | |",
        f"| `ingestd ingest`, 512 MB of zeros, no newline | {large.wall_s:.2f} s wall ({per_large:.2f} ms/MB), "
        f"{large.cpu_s:.2f} s CPU, peak {large.maxrss_mb:.0f} MiB | | |",
        f"| time per MB, 512 MB / 64 MB | {ratio:.2f}x | within 1.5x (linear) | {_v(ratio <= 1.5)} |",
    ]
    for f in figs:
        if f.what in ("empty", "zeros-64MB", "zeros-512MB"):
            continue
        ok = f.maxrss_mb < 300
        lines.append(
            f"| `ingestd ingest`, {f.what} ({f.oversized} oversized marker) | peak {f.maxrss_mb:.0f} MiB, "
            f"{f.wall_s:.2f} s wall, {f.cpu_s:.2f} s CPU | peak < 300 MB, one pass | {_v(ok)} |"
        )
    p99 = percentile(d.latencies_ms, 99) if d.latencies_ms else float("inf")
    lines += [
        f"| daemon: hooks, same run, no such file (the machine's baseline) | {_lat(base)} | | |",
        f"| daemon: hooks while a {d.size_bytes // MB} MB file without newline appears in the tailed root | "
        f"{_lat(d)} | p99 < 50 ms | {_v(p99 < 50 and not d.failed)} |",
        f"| daemon: peak RSS meanwhile | {d.peak_rss_mb:.0f} MiB | < 300 MB | {_v(d.peak_rss_mb < 300)} |",
        f"| daemon: SIGTERM to exit | {d.sigterm_s:.2f} s (exit {d.exit_code}) | < 2 s | "
        f"{'meets' if d.sigterm_s < 2 and d.exit_code == 0 else '**misses**'} |",
        "",
        "A unit test counts the framer's work instead of timing it: bytes joined per byte read "
        "(`tests/reliability/test_no_input_stops.py::test_framing_copies_each_byte_a_bounded_number_of_times`).",
        END,
    ]
    return "\n".join(lines) + "\n"


def section_of(text: str) -> str:
    """The framing section of a BENCHMARKS.md text ("" when it has none): ``bench.run`` keeps it."""
    return marked_section(text, BEGIN, END)


def write_section(path: Path, section: str) -> None:
    """Replace (or append) the framing section of ``path``."""
    write_marked(path, section, BEGIN, END)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.framing")
    p.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ingestd-framing-") as tmp:
        figs, base, d = measure(Path(tmp))
    section = render(figs, base, d)
    write_section(args.out, section)
    sys.stdout.write(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
