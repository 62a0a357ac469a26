"""Cold ``ingestd ingest`` of a corpus into a fresh database, the restart over it, and the token check."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.corpus import CACHE, Corpus
from bench.proc import ProcResult, ingestd_exe, run_measured
from bench.truth import TotalsCheck, check_totals

DB_DIR = CACHE / "dbs"


def db_path(corpus: Corpus) -> Path:
    """Where the benchmark keeps the database of ``corpus`` (reused by the report measurements)."""
    return DB_DIR / corpus.name / "ingestd.db"


def db_size_bytes(path: Path) -> int:
    """The database file plus its ``-wal`` and ``-shm``."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def fresh_db(path: Path) -> None:
    """Remove the database (and its directory's other files) so the next ingest is cold."""
    if path.parent.exists():
        shutil.rmtree(path.parent)
    path.parent.mkdir(parents=True, mode=0o700)


BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


def bucket_totals(path: Path) -> list[tuple[str, int]]:
    """Tokens per bucket over ``token_usage`` (read-only): its five bucket columns, or the
    ``(bucket, tokens)`` rows of a database made before them (an older source tree's column)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cols = {str(r[1]) for r in conn.execute("PRAGMA table_info(token_usage)")}
        if "bucket" in cols:
            rows = conn.execute("SELECT bucket, sum(tokens) FROM token_usage GROUP BY bucket")
            return [(str(b), int(t or 0)) for b, t in rows]
        sums = conn.execute(f"SELECT {', '.join(f'sum({b})' for b in BUCKETS)} FROM token_usage").fetchone()
        return [(b, int(t or 0)) for b, t in zip(BUCKETS, sums, strict=True)]
    finally:
        conn.close()


def count(path: Path, sql: str) -> int:
    """One integer from a read-only query."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute(sql).fetchone()[0] or 0)
    finally:
        conn.close()


def has_table(path: Path, name: str) -> bool:
    """Whether the database has table ``name`` (an older ingestd's may not: paired runs)."""
    return count(path, f"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '{name}'") > 0


def ingest_argv(corpus: Corpus, db: Path) -> list[str]:
    """The measured command."""
    return [ingestd_exe(), "ingest", "--projects", str(corpus.projects), "--db", str(db), "--json"]


def _summary(r: ProcResult) -> dict[str, Any]:
    try:
        doc = orjson.loads(r.stdout)
    except orjson.JSONDecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}


@dataclass
class IngestResult:
    """All runs of cold ingest + restart over one corpus.

    Attributes:
        corpus: Corpus.
        cold: list[ProcResult], the cold runs (fresh database each).
        restart: list[ProcResult], the second ingest after each cold run.
        db_bytes: int, database size after the last cold run.
        check: TotalsCheck | None, tokens stored vs ground truth (after the last run).
        summary: dict, the last cold run's ``--json`` summary.
        error: str, why the measurement stopped ("" when it did not).
        events_raw: int, rows in the log after the last run.
        payload_bytes: int, their payloads as stored: per-row values plus the blocks of lines they
            refer to (``ingestd.store.payload``, ``ingestd.store.payload_blocks``).
    """

    corpus: Corpus
    cold: list[ProcResult] = field(default_factory=list)
    restart: list[ProcResult] = field(default_factory=list)
    db_bytes: int = 0
    check: TotalsCheck | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    events_raw: int = 0
    payload_bytes: int = 0


def _fail(r: ProcResult) -> str:
    tail = r.stderr.decode(errors="replace").strip().splitlines()[-5:]
    return f"exit {r.returncode}: " + " / ".join(tail)


def _ingest_once(res: IngestResult, label: str, db: Path, timeout_s: float) -> ProcResult | None:
    """One measured ``ingestd ingest`` of ``res.corpus``; on failure sets ``res.error`` and returns None."""
    try:
        run = run_measured(ingest_argv(res.corpus, db), timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        res.error = f"{label} ingest did not finish within {timeout_s:.0f} s"
        return None
    if run.returncode != 0:
        res.error = f"{label} ingest failed, " + _fail(run)
        return None
    return run


def measure_ingest(corpus: Corpus, *, runs: int, timeout_s: float, long_run_s: float = 60.0) -> IngestResult:
    """Cold ingest ``runs`` times (fewer when one run takes over ``long_run_s``), each followed by a restart."""
    res = IngestResult(corpus)
    db = db_path(corpus)
    for i in range(runs):
        fresh_db(db)
        print(f"bench: cold ingest {corpus.name} run {i + 1}/{runs} ...", file=sys.stderr, flush=True)
        cold = _ingest_once(res, "cold", db, timeout_s)
        if cold is None:
            return res
        res.cold.append(cold)
        res.summary = _summary(cold)
        again = _ingest_once(res, "restart", db, timeout_s)
        if again is None:
            return res
        res.restart.append(again)
        if cold.wall_s > long_run_s:
            break
    res.db_bytes = db_size_bytes(db)
    res.check = check_totals(corpus.truth, bucket_totals(db))
    res.events_raw = count(db, "SELECT count(*) FROM events_raw")
    res.payload_bytes = count(
        db,
        "SELECT (SELECT coalesce(sum(length(payload)), 0) FROM events_raw)"
        " + (SELECT coalesce(sum(length(data)), 0) FROM payload_blocks)"
        + (" + (SELECT coalesce(sum(length(data)), 0) FROM payload_open)" if has_table(db, "payload_open") else ""),
    )
    return res
