"""Read latency (``ingestd cost --json``, ``ingestd tree SESSION --json``) and ``ingestd replay``.

Each read is measured twice: the full CLI (a subprocess: interpreter start-up, imports, connection, query,
JSON) and, where the report function can be imported, an in-process call of it on an open read-only
connection, which is the figure SPEC §11's "answering ... under 30 ms" is about. ``ingestd --version`` is
timed as well, to show what start-up alone costs.
"""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.proc import ProcResult, ingestd_exe, run_measured


@dataclass
class Latency:
    """Repeated timings of one read.

    Attributes:
        cli_s: list[float], full CLI wall seconds.
        inproc_s: list[float], in-process report call seconds (empty when the function is not importable).
        error: str, why it could not be measured ("" when it was).
        inproc_note: str, which function was called, or why not.
    """

    cli_s: list[float] = field(default_factory=list)
    inproc_s: list[float] = field(default_factory=list)
    error: str = ""
    inproc_note: str = ""


def largest_session(db: Path) -> str | None:
    """The session with the most ``token_usage`` rows (the heaviest tree)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT session_id, count(*) c FROM token_usage GROUP BY session_id ORDER BY c DESC LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    return str(row[0]) if row else None


def _time_cli(argv: list[str], runs: int) -> tuple[list[float], str]:
    out: list[float] = []
    for _ in range(runs):
        r = run_measured(argv, timeout_s=120, sample_tree=False)
        if r.returncode != 0:
            return out, f"exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[-300:]}"
        out.append(r.wall_s)
    return out, ""


def _inproc_cost(db: Path) -> Callable[[], Any]:
    from ingestd.report.cost import cost_report
    from ingestd.report.window import make_window, resolve_zone
    from ingestd.store.connection import connect

    conn = connect(db, readonly=True)
    zone = resolve_zone("UTC", {})
    window = make_window(None, None, zone, datetime.now(UTC))
    return lambda: cost_report(conn, by=None, window=window, zone=zone)


def _inproc_tree(db: Path, session: str) -> Callable[[], Any]:
    from ingestd.report.tree import tree_report
    from ingestd.store.connection import connect

    conn = connect(db, readonly=True)
    return lambda: tree_report(conn, session)


def _time_inproc(factory: Callable[[], Callable[[], Any]], runs: int) -> tuple[list[float], str]:
    try:
        call = factory()
        call()  # first call opens pages and imports lazily; not counted
    except Exception as e:  # the report code is being built by others; say why, do not fake
        return [], f"in-process call unavailable: {type(e).__name__}: {e}"
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        out.append(time.perf_counter() - t0)
    return out, ""


def measure_cost(db: Path, runs: int) -> Latency:
    """``ingestd cost --json`` on ``db``: CLI wall and in-process ``cost_report``."""
    lat = Latency()
    lat.cli_s, lat.error = _time_cli([ingestd_exe(), "cost", "--db", str(db), "--json"], runs)
    lat.inproc_s, lat.inproc_note = _time_inproc(lambda: _inproc_cost(db), runs)
    lat.inproc_note = lat.inproc_note or "ingestd.report.cost.cost_report(conn, by=None, window=all, zone=UTC)"
    return lat


def measure_tree(db: Path, session: str, runs: int) -> Latency:
    """``ingestd tree SESSION --json`` on ``db``: CLI wall and in-process ``tree_report``."""
    lat = Latency()
    lat.cli_s, lat.error = _time_cli([ingestd_exe(), "tree", session, "--db", str(db), "--json"], runs)
    lat.inproc_s, lat.inproc_note = _time_inproc(lambda: _inproc_tree(db, session), runs)
    lat.inproc_note = lat.inproc_note or "ingestd.report.tree.tree_report(conn, session)"
    return lat


def measure_startup(runs: int) -> list[float]:
    """``ingestd --version`` wall: interpreter start-up plus the CLI's imports."""
    return _time_cli([ingestd_exe(), "--version"], runs)[0]


@dataclass
class ReplayResult:
    """One ``ingestd replay`` run.

    Attributes:
        run: ProcResult | None, the measured run (None when it timed out).
        error: str, why it failed or was skipped.
    """

    run: ProcResult | None = None
    error: str = ""


def measure_replay(db: Path, timeout_s: float) -> ReplayResult:
    """``ingestd replay --db DB`` once: wall, CPU, peak RSS; a non-zero exit is reported, not hidden."""
    try:
        r = run_measured([ingestd_exe(), "replay", "--db", str(db), "--json"], timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        return ReplayResult(None, f"did not finish within {timeout_s:.0f} s (stopped)")
    if r.returncode != 0:
        return ReplayResult(r, f"exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[-300:]}")
    return ReplayResult(r, "")


__all__ = ["Latency", "ProcResult", "ReplayResult", "largest_session", "measure_cost", "measure_replay", "measure_tree"]
