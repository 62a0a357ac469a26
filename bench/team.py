"""``python -m bench.team``: team-mode figures (SPEC §13), written into BENCHMARKS.md's team section.

- ship: a generated corpus ingested into a local database, shipped to a throwaway PostgreSQL
  cluster (``tests.pgcluster``) by ``ingestd ship``; wall time and MB/s of log payload, and the
  time scaled to 1 GB of payload (target: 1 GB in at most 30 s).
- cost with 10 hosts: ten local databases from ten differently seeded corpora, shipped and
  projected; ``cost --json --store`` run in-process (``cost_report`` through ``PgReadConn``, i.e.
  the client round trips included: an upper bound of the server time) and PostgreSQL's own
  execution time of its queries (``EXPLAIN ANALYZE``) (target: under 50 ms).

The section sits between ``<!-- team:begin -->`` and ``<!-- team:end -->``; ``bench.run`` keeps it
when it rewrites the rest of the file.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any

import psycopg

from bench.corpus import ensure_corpus
from bench.proc import REPO
from ingestd.central.pg import PgReadConn
from ingestd.central.pg import connect as pg_connect
from ingestd.report.cost import cost_report
from ingestd.report.window import make_window, resolve_zone
from tests.pgcluster import Cluster, bin_dir

BEGIN, END = "<!-- team:begin -->", "<!-- team:end -->"
GB = 1e9


def _ingestd(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "ingestd", *args], check=True, stdout=subprocess.DEVNULL)


def _local(work: Path, name: str, mb: int, seed: int, host: str) -> Path:
    corpus = ensure_corpus(name, mb, seed)
    db = work / f"{name}.db"
    from ingestd.store.connection import connect
    from ingestd.store.identity import database_identity
    from ingestd.store.migrate import migrate

    conn = connect(db)
    migrate(conn)
    database_identity(conn, hostname=host)
    conn.close()
    _ingestd("ingest", "--db", str(db), "--projects", str(corpus.projects))
    return db


def _payload_bytes(db: Path) -> int:
    """The log's payload bytes as read (what ship sends; stored compressed locally)."""
    from ingestd.store.connection import connect
    from ingestd.store.payload import size_of

    conn = connect(db, readonly=True)
    try:
        return sum(size_of(conn, c, p) for c, p in conn.execute("SELECT codec, payload FROM events_raw"))
    finally:
        conn.close()


def _new_db(cluster: Cluster, name: str) -> str:
    with psycopg.connect(cluster.url(), autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {name}")
        c.execute(f"CREATE DATABASE {name}")
    return cluster.url(name)


def measure(work: Path, ship_mb: int, hosts: int, host_mb: int, runs: int) -> list[tuple[str, str, str, str]]:
    """Rows (measurement, figure, target, verdict)."""
    bindir = bin_dir()
    if bindir is None:
        raise SystemExit("bench.team: PostgreSQL server binaries not found (apt-get install postgresql)")
    cluster = Cluster(bindir).start()
    rows: list[tuple[str, str, str, str]] = []
    try:
        db = _local(work, f"c{ship_mb}", ship_mb, 1 if ship_mb == 100 else 7, "bench-ship")
        size = _payload_bytes(db)
        walls = []
        for i in range(runs):
            url = _new_db(cluster, f"ship{i}")
            t = time.perf_counter()
            _ingestd("ship", "--db", str(db), "--to", url)
            walls.append(time.perf_counter() - t)
            # a second database file for the next run: the mark lives in the local meta too
        w = median(walls)
        per_gb = w * GB / size
        rows.append(
            (
                f"ship c{ship_mb} ({size / 1e6:.0f} MB of log payload)",
                f"{w:.2f} s ({min(walls):.2f}–{max(walls):.2f}, {runs} runs); {size / 1e6 / w:.0f} MB/s",
                "",
                "",
            )
        )
        rows.append(
            ("ship, scaled to 1 GB of payload", f"{per_gb:.1f} s", "≤ 30 s", "meets" if per_gb <= 30 else "**misses**")
        )
        url = _new_db(cluster, "team")
        for h in range(hosts):
            hdb = _local(work, f"h{host_mb}s{100 + h}", host_mb, 100 + h, f"bench-host-{h:02d}")
            _ingestd("ship", "--db", str(hdb), "--to", url)
        t = time.perf_counter()
        _ingestd("project", "--store", url)
        project_s = time.perf_counter() - t
        zone = resolve_zone("UTC", {})
        window = make_window(None, None, zone, datetime.now(UTC))
        conn = PgReadConn(pg_connect(url, autocommit=True))
        report_conn: Any = conn  # the reports' connection shape (``ingestd.central.pg``)
        lat = []
        for _ in range(max(runs, 5) * 4):
            t = time.perf_counter()
            cost_report(report_conn, by=None, window=window, zone=zone)
            lat.append((time.perf_counter() - t) * 1000)
        plan = conn.conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) SELECT r.model, r.rate_effective_from, sum(r.input), sum(r.output),"
            " sum(r.row_count) FROM token_usage_rollup r GROUP BY r.model, r.rate_effective_from"
        ).fetchone()
        server_ms = float(plan[0][0]["Execution Time"]) if plan else float("nan")
        n_rollup = conn.execute("SELECT count(*) FROM token_usage_rollup")[0][0]
        conn.close()
        rows.append((f"project {hosts} hosts × {host_mb} MB", f"{project_s:.1f} s", "", ""))
        rows.append(
            (
                f"cost --json --store, {hosts} hosts ({n_rollup:,} rollup rows), in-process",
                f"{median(lat):.1f} ms (p95 {sorted(lat)[int(len(lat) * 0.95) - 1]:.1f})",
                "< 50 ms",
                "meets" if median(lat) < 50 else "**misses**",
            )
        )
        rows.append(("  of which the totals query's server execution time", f"{server_ms:.1f} ms", "< 50 ms", ""))
    finally:
        cluster.stop()
    return rows


def write(rows: list[tuple[str, str, str, str]], out: Path, command: str) -> None:
    """Replace (or add) the team section of ``out``."""
    body = "\n".join(
        [
            BEGIN,
            "## Team mode (PostgreSQL)",
            "",
            f"`{command}`, PostgreSQL {bin_dir()} on this machine (throwaway cluster, fsync off), "
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
            "",
            "| measurement | figure | SPEC §13 target | verdict |",
            "|---|---|---|---|",
            *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
            END,
        ]
    )
    text = out.read_text() if out.exists() else ""
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), body, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + body + "\n"
    out.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.team", description=__doc__.splitlines()[0])
    ap.add_argument("--ship-mb", type=int, default=100, help="corpus shipped (MB)")
    ap.add_argument("--hosts", type=int, default=10)
    ap.add_argument("--host-mb", type=int, default=10, help="corpus per host (MB)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    args = ap.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-team-") as d:
        rows = measure(Path(d), args.ship_mb, args.hosts, args.host_mb, args.runs)
    cmd = "make bench-team  (python -m bench.team)"
    write(rows, args.out, cmd)
    for r in rows:
        print(" | ".join(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
