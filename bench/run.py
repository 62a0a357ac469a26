"""``python -m bench.run --quick|--full``: measure, write BENCHMARKS.md, fail loudly on wrong totals.

Exit status: 0 done (targets may be missed: BENCHMARKS.md says so), 1 token totals differ from the
generator's ground truth (or the harness itself broke).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench import machine
from bench.available import has_command
from bench.corpus import ensure_corpus, orjson_floor, warm_page_cache
from bench.daemon import daemon_cpu_s, running_daemon, temp_workdir
from bench.failfast import measure_busy_port
from bench.framing import section_of as framing_section
from bench.hookload import LoadResult, run_load
from bench.hookwrk import WrkResult, ensure_wrk, run_wrk
from bench.ingestbench import db_path, fresh_db, ingest_argv, measure_ingest
from bench.live import measure_live
from bench.prio import section_of as prio_section
from bench.proc import REPO, compile_package
from bench.profile import profile_command, start_pid_profile
from bench.queries import largest_session, measure_cost, measure_replay, measure_startup, measure_tree
from bench.report import HOOK_P99_MS, render
from bench.results import CorpusResults, Results
from bench.sidebyside import section_of as sidebyside_section
from bench.statusline import section_of as statusline_section
from bench.table import marked_section


@dataclass(frozen=True, slots=True)
class Plan:
    """How much to measure.

    Attributes:
        mode: str, "quick" or "full".
        corpora: tuple of (name, mb, seed), smallest first.
        floor_runs: int.
        ingest_runs: int, cold runs per corpus (fewer when one takes over a minute).
        ingest_timeout_s: float, per ingest run.
        read_runs: int, runs of each read latency.
        replay_timeout_s: dict[str, float], corpus -> timeout; corpora absent are not replayed.
        hook_plan: tuple of (concurrency, requests, max_s).
        hook_runs: int, runs per concurrency.
        live_appends: int, appends per session.
    """

    mode: str
    corpora: tuple[tuple[str, int, int], ...]
    floor_runs: int
    ingest_runs: int
    ingest_timeout_s: float
    read_runs: int
    replay_timeout_s: dict[str, float]
    hook_plan: tuple[tuple[int, int, float], ...]
    hook_runs: int
    live_appends: int


QUICK = Plan(
    "quick",
    (("c20", 20, 3),),
    floor_runs=3,
    ingest_runs=1,
    ingest_timeout_s=300,
    read_runs=3,
    replay_timeout_s={"c20": 120},
    hook_plan=((1, 1000, 3), (16, 4000, 3), (64, 4000, 3)),
    hook_runs=1,
    live_appends=6,
)
FULL = Plan(
    "full",
    (("c100", 100, 1), ("c1000", 1000, 2)),
    floor_runs=3,
    ingest_runs=3,
    ingest_timeout_s=1800,
    read_runs=10,
    replay_timeout_s={"c100": 600, "c1000": 300},
    hook_plan=((1, 4000, 15), (16, 30000, 15), (64, 30000, 15)),
    hook_runs=3,
    live_appends=30,
)


def say(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


WRK = "wrk 4.1 (`bench/hookwrk.py`, `bench/hookwrk.lua`: native, one thread)"
PYGEN = "`bench/hookload.py` (Python, aiohttp)"


def _hook_load(wrk: str | None, url: str, conc: int, requests: int, max_s: float, run: str) -> LoadResult | WrkResult:
    """One load run: wrk for ``max_s`` seconds when installed, else the Python generator
    (``requests`` or ``max_s``, whichever comes first)."""
    if wrk is not None:
        return run_wrk(wrk, url, conc, max_s, run=run)
    return asyncio.run(run_load(url, conc, requests, max_s, run=run))


def _profile_daemon_under_load(res: Results, url: str, pid: int, workdir: Path, wrk: str | None) -> None:
    """py-spy on the daemon while 16 clients post (the receiver figures are the ones that miss)."""
    prof = start_pid_profile(pid, 6, workdir / "daemon-prof.txt")
    time.sleep(0.5)  # let py-spy attach before the load starts
    _hook_load(wrk, url, 16, 1_000_000, 6.5, "profile")
    hot, why = prof.finish()
    if hot is not None:
        res.hotspots["`ingestd serve` under 16-client hook load"] = hot
    else:
        res.profile_notes.append(f"daemon profile skipped: {why}")


def _hooks(res: Results, plan: Plan, profile: bool) -> None:
    if not has_command("serve"):
        res.hooks_error = "not available yet (`ingestd serve` missing)"
        res.unavailable.append("serve")
        return
    wrk, res.hooks_generator_note = ensure_wrk()
    res.hooks_generator = WRK if wrk is not None else PYGEN
    with temp_workdir() as tmp:
        try:
            with running_daemon(Path(tmp), None) as d:
                asyncio.run(run_load(d.url, 4, 300, 5, run="warmup"))
                for conc, requests, max_s in plan.hook_plan:
                    runs: list[LoadResult | WrkResult] = []
                    d_cpu = c_cpu = wall = 0.0
                    for i in range(plan.hook_runs):
                        say(f"hook load, {conc} client(s), run {i + 1}/{plan.hook_runs}")
                        dc0, cc0, t0 = daemon_cpu_s(d.pid), time.process_time(), time.perf_counter()
                        r = _hook_load(wrk, d.url, conc, requests, max_s, f"c{conc}r{i}")
                        runs.append(r)
                        wall += time.perf_counter() - t0
                        d_cpu += daemon_cpu_s(d.pid) - dc0
                        c_cpu += r.cpu_s if isinstance(r, WrkResult) else time.process_time() - cc0
                    res.hooks[conc] = runs
                    res.hooks_daemon_cpu[conc] = d_cpu / wall if wall else 0
                    res.hooks_client_cpu[conc] = c_cpu / wall if wall else 0
                if profile and _hooks_miss(res):
                    say("profiling the daemon under hook load (py-spy)")
                    _profile_daemon_under_load(res, d.url, d.pid, Path(tmp), wrk)
        except RuntimeError as e:
            res.hooks_error = f"daemon did not start: {e}"


def kept_sections(old: str) -> str:
    """The sections of the previous BENCHMARKS.md text ``old`` that other commands measure, each
    once: side by side, framing, status line, hooks during a catch-up, the hand-written database
    size and what is left, then team mode."""
    kept = sidebyside_section(old) + framing_section(old) + statusline_section(old) + prio_section(old)
    for name in ("size", "left"):  # hand-written: the database-size figures, what is left and the next steps
        kept += marked_section(old, f"<!-- {name}:begin -->", f"<!-- {name}:end -->")
    if "<!-- team:begin -->" in old:  # the team section alone: what follows it is kept above, once
        end = old.find("<!-- team:end -->")
        team = old[old.index("<!-- team:begin -->") : end + len("<!-- team:end -->") if end >= 0 else len(old)]
        kept += "\n" + team.rstrip("\n") + "\n"
    return kept


def _hooks_miss(res: Results) -> bool:
    runs16 = res.hooks.get(16, [])
    if not runs16:
        return False
    return statistics.median(r.pct_ms(99) for r in runs16) > HOOK_P99_MS


def _live(res: Results, plan: Plan, source_projects: Path) -> None:
    if not has_command("serve"):
        return
    candidates = [p for p in source_projects.glob("*/*.jsonl")]
    if not candidates:
        return
    longest = max(candidates, key=lambda p: p.stat().st_size)
    say(f"append → projected latency (long session {longest.name})")
    res.live = measure_live(longest, plan.live_appends)


def _reads(res: Results, plan: Plan, db: Path) -> None:
    res.startup_s = measure_startup(plan.read_runs)
    if has_command("serve") and res.corpora:
        say("serve on a busy port (fail fast)")
        res.busy_port_s, res.busy_port_note = measure_busy_port(res.corpora[-1].corpus.projects, plan.read_runs)
    session = largest_session(db) if db.exists() else None
    if has_command("cost"):
        say("cost latency")
        res.cost = measure_cost(db, plan.read_runs)
    else:
        res.unavailable.append("cost")
    if has_command("tree") and session:
        say("tree latency")
        res.tree_session = session
        res.tree = measure_tree(db, session, plan.read_runs)
    elif not has_command("tree"):
        res.unavailable.append("tree")


def _profile_ingest(res: Results, cr: CorpusResults) -> None:
    ing = cr.ingest
    if ing is None or not ing.cold:
        return
    rows_missing = [r.wall_s for r in ing.cold]
    if min(rows_missing) <= 5.0 * cr.corpus.bytes / 1e9:
        return
    scratch = REPO / "bench" / "cache" / "dbs" / "profile" / "ingestd.db"
    fresh_db(scratch)
    say(f"profiling cold ingest of {cr.corpus.name} (py-spy)")
    hot, why = profile_command(ingest_argv(cr.corpus, scratch))
    if hot is not None:
        res.hotspots[f"cold `ingestd ingest` of {cr.corpus.name}"] = hot
    else:
        res.profile_notes.append(f"ingest profile skipped: {why}")


def run(plan: Plan, command: str, out: Path, profile: bool) -> int:
    t_start = time.perf_counter()
    compile_package()
    machine_rows = machine.describe()
    res = Results(plan.mode, command, datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    have_ingest = has_command("ingest")
    if not have_ingest:
        res.unavailable.append("ingest")
    for name, mb, seed in plan.corpora:
        corpus = ensure_corpus(name, mb, seed)
        say(f"{name}: {corpus.describe()}")
        warm_page_cache(corpus.projects)
        cr = CorpusResults(corpus)
        cr.floor = [orjson_floor(corpus.projects) for _ in range(plan.floor_runs)]
        if have_ingest:
            cr.ingest = measure_ingest(corpus, runs=plan.ingest_runs, timeout_s=plan.ingest_timeout_s)
        res.corpora.append(cr)
    largest = res.corpora[-1]
    db = db_path(largest.corpus)
    if have_ingest and largest.ingest and largest.ingest.cold:
        _reads(res, plan, db)
    else:
        for c in ("cost", "tree"):
            if not has_command(c):
                res.unavailable.append(c)
    if has_command("replay"):
        for cr in res.corpora:
            if cr.corpus.name in plan.replay_timeout_s and cr.ingest and cr.ingest.cold:
                say(f"replay {cr.corpus.name}")
                cr.replay = measure_replay(db_path(cr.corpus), plan.replay_timeout_s[cr.corpus.name])
    else:
        res.unavailable.append("replay")
    _hooks(res, plan, profile)
    _live(res, plan, res.corpora[0].corpus.projects)
    if profile:
        # the smallest corpus: same code paths as the largest, a fraction of the (py-spy slowed) time
        _profile_ingest(res, res.corpora[0])
    res.elapsed_s = time.perf_counter() - t_start
    machine_rows.append(("load average at end (1/5/15 min)", machine.loadavg()))
    machine_rows.append(("note", "the machine is shared: other work running at the same time inflates wall figures"))
    # the side-by-side section (python -m bench.sidebyside), the framing section (python -m
    # bench.framing), the status-line section (python -m bench.statusline) and the team-mode
    # section (python -m bench.team) are measured separately: keep them, the team section last
    kept = kept_sections(out.read_text() if out.exists() else "")
    out.write_text(render(res, machine_rows) + (f"\n{kept}" if kept else ""))
    say(f"wrote {out} ({res.elapsed_s:.0f} s)")
    bad = [cr for cr in res.corpora if cr.ingest and cr.ingest.check and not cr.ingest.check.ok]
    for cr in bad:
        assert cr.ingest and cr.ingest.check
        print(
            f"\n*** BENCH FAILED: token totals of {cr.corpus.name} differ from ground_truth.json final: "
            f"{cr.ingest.check.differences()} (got {cr.ingest.check.got}, expected {cr.ingest.check.expected}) ***\n",
            file=sys.stderr,
        )
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--quick", action="store_true", help="20 MB corpus, single runs: about a minute")
    g.add_argument("--full", action="store_true", help="100 MB and 1 GB corpora, several runs")
    ap.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    ap.add_argument("--no-profile", action="store_true", help="skip py-spy even where a figure misses")
    args = ap.parse_args(argv)
    plan = QUICK if args.quick else FULL
    command = f"make bench{'-quick' if args.quick else ''}  (python -m bench.run --{plan.mode})"
    return run(plan, command, args.out, profile=not args.no_profile)


if __name__ == "__main__":
    sys.exit(main())
