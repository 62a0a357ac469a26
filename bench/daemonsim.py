"""A database filled as the daemon fills it: the real corpus appended a few lines at a time.

``python -m bench.daemonsim OUT.db [--corpus DIR]``: six sessions live at a time, three of them
appending one to three lines every 20 s of simulated clock, one ``ingest_roots`` transaction per
round (the tailer's), then writes two hours later (idle open blocks are sealed by a later write).
Prints the rounds, the seconds taken, the file's size, the time to read every payload back and
its largest tables (BENCHMARKS.md, "Database size"). Deterministic (fixed seed); writes
``OUT.db`` and ``OUT.db.projects``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ingestd.ingest.backfill import ingest_roots
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.payload import decode

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "claude-projects"
LIVE = 6  # sessions live at a time
STEP = timedelta(seconds=20)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def simulate(out: Path, corpus: Path = CORPUS, seed: int = 7) -> tuple[int, float]:
    """Fill ``out`` (replaced) from ``corpus`` a few lines at a time; ``(rounds, seconds)``."""
    dst = Path(f"{out}.projects")
    shutil.rmtree(dst, ignore_errors=True)
    for f in out.parent.glob(out.name + "*"):
        if f.is_file():
            f.unlink()
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    lines = {p: p.read_bytes().splitlines(keepends=True) for p in files if p.suffix == ".jsonl"}
    for p in files:
        if p.suffix != ".jsonl":
            (dst / p.relative_to(corpus)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(p, dst / p.relative_to(corpus))
    rng = random.Random(seed)
    pos = dict.fromkeys(lines, 0)
    order = list(lines)
    rng.shuffle(order)
    active: list[Path] = []
    conn = connect(out)
    migrate(conn)
    now, rounds, t0 = datetime(2027, 1, 1, tzinfo=UTC), 0, time.perf_counter()
    while order or active:
        while len(active) < LIVE and order:
            active.append(order.pop())
        for p in rng.sample(active, min(3, len(active))):
            k = rng.randint(1, 3)
            target = dst / p.relative_to(corpus)
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("ab") as w:
                w.writelines(lines[p][pos[p] : pos[p] + k])
            pos[p] += k
            if pos[p] >= len(lines[p]):
                active.remove(p)
        now += STEP
        ingest_roots(conn, [dst], now=_stamp(now))
        rounds += 1
    now += timedelta(hours=2)
    extra = dst / "-later" / "later.jsonl"
    extra.parent.mkdir(parents=True, exist_ok=True)
    first = next(iter(lines.values()))
    for i in range(60):  # writes after the sessions ended: each seals up to 4 idle open blocks
        with extra.open("ab") as w:
            w.write(first[i % len(first)])
        ingest_roots(conn, [dst], now=_stamp(now + timedelta(seconds=i)))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    elapsed = time.perf_counter() - t0
    conn.close()
    return rounds, elapsed


def read_us_per_row(db: Path, rounds: int = 3) -> float:
    """Microseconds per row to decode every log payload in id order (a sequential reader: replay,
    verify, ship), best of ``rounds``, each on a fresh read-only connection."""
    best = float("inf")
    for _ in range(rounds):
        conn = connect(db, readonly=True)
        rows = list(conn.execute("SELECT codec, payload FROM events_raw ORDER BY id"))
        t = time.perf_counter()
        for codec, stored in rows:
            decode(conn, codec, stored)
        best = min(best, (time.perf_counter() - t) / max(len(rows), 1))
        conn.close()
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--read-only", action="store_true", help="only time reading an existing OUT.db")
    args = ap.parse_args()
    if not args.read_only:
        rounds, elapsed = simulate(args.out, args.corpus)
        print(f"rounds {rounds}  seconds {elapsed:.1f}  size {args.out.stat().st_size}")
    print(f"reading every payload in id order: {read_us_per_row(args.out):.1f} us a row")
    conn = connect(args.out, readonly=True)
    for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 8"):
        print(f"  {name:40s} {size / 1e6:7.2f} MB")


if __name__ == "__main__":
    main()
