"""``python -m bench.sidebyside``: the side-by-side table, measured in ONE run.

Every figure of a corpus is taken in the same interleaved rounds (round 1: floor, ccusage, each
ingester's cold ingest, restart, replay and ``cost --json``; round 2: the same again; ...), and
the ingesters take turns going first (every second round reverses their order: ``turn``),
and each is shown as the median of the rounds and as a ratio to the median orjson floor of the same
run: the machine is shared, so only ratios measured back to back compare.

Columns are "ingesters": this checkout's ``ingestd`` and, with ``--baseline-src DIR``, another
source tree of ingestd (e.g. ``git archive main ingestd | tar -x -C DIR``) run with the same
interpreter (``PYTHONPATH=DIR python -m ingestd``), so a change is measured before and after in the
same run. ccusage 20 (``npm install --prefix DIR ccusage@20.0.24``, ``daily --json``) is the
reference of a native reporter that stores nothing; it is skipped with a note when npm is missing.

The section it writes into BENCHMARKS.md sits between ``<!-- sidebyside:begin -->`` and
``<!-- sidebyside:end -->``; ``bench.run`` keeps it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench import machine
from bench.corpus import CACHE, Corpus, ensure_corpus, orjson_floor, warm_page_cache
from bench.ingestbench import bucket_totals, db_size_bytes, fresh_db
from bench.proc import REPO, ProcResult, compile_package, ingestd_exe, run_measured
from bench.stats import fmt_num, summarize
from bench.table import marked_section
from bench.truth import check_totals

BEGIN = "<!-- sidebyside:begin -->"
END = "<!-- sidebyside:end -->"
CCUSAGE_VERSION = "20.0.24"
CORPORA = {"c20": (20, 3), "c100": (100, 1), "c1000": (1000, 2)}


@dataclass(frozen=True, slots=True)
class Ingester:
    """One way to run ``ingestd``.

    Attributes:
        label: str, the column name ("this branch", "main", ...).
        argv: tuple[str, ...], the command prefix standing for ``ingestd``.
        env: dict[str, str] | None, the environment (None: inherit).
    """

    label: str
    argv: tuple[str, ...]
    env: dict[str, str] | None = None


@dataclass
class Figures:
    """The samples of one ingester over the rounds (seconds; MiB; bytes).

    Attributes:
        cold, restart, replay, cost: list[float], wall seconds per round.
        cold_cpu: list[float], CPU seconds of the cold ingests.
        cold_rss: list[float], peak RSS (MiB, sum over the process tree) of the cold ingests.
        replay_rss: list[float], the same for replay.
        db_bytes: list[int], database size after each cold ingest.
        totals_ok: bool | None, token totals equal ``ground_truth.json`` (None: not checked).
        error: str, why a figure is missing.
    """

    cold: list[float] = field(default_factory=list)
    cold_cpu: list[float] = field(default_factory=list)
    cold_rss: list[float] = field(default_factory=list)
    restart: list[float] = field(default_factory=list)
    replay: list[float] = field(default_factory=list)
    replay_rss: list[float] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    db_bytes: list[int] = field(default_factory=list)
    totals_ok: bool | None = None
    error: str = ""


@dataclass
class SideBySide:
    """One corpus measured side by side.

    Attributes:
        corpus: Corpus.
        rounds: int, rounds asked for.
        floor: list[float], orjson floor wall seconds per round.
        floor_cpu: list[float], its CPU seconds (the CPU ratios are steadier than wall under load).
        ccusage: list[float], ccusage wall seconds per round (empty: skipped, see ``ccusage_note``).
        ccusage_rss: list[float], its peak RSS (MiB).
        ccusage_note: str.
        figures: dict[str, Figures], ingester label -> its samples (insertion order = columns).
        load: list[str], load average before and after.
    """

    corpus: Corpus
    rounds: int
    floor: list[float] = field(default_factory=list)
    floor_cpu: list[float] = field(default_factory=list)
    ccusage: list[float] = field(default_factory=list)
    ccusage_rss: list[float] = field(default_factory=list)
    ccusage_note: str = ""
    figures: dict[str, Figures] = field(default_factory=dict)
    load: list[str] = field(default_factory=list)


def say(msg: str) -> None:
    print(f"bench.sidebyside: {msg}", file=sys.stderr, flush=True)


def ensure_ccusage(prefix: Path) -> tuple[list[str] | None, str]:
    """``[path to ccusage]`` installed under ``prefix`` by npm, or (None, why not)."""
    exe = prefix / "node_modules" / ".bin" / "ccusage"
    if exe.exists():
        return [str(exe)], ""
    npm = shutil.which("npm")
    if npm is None:
        return None, "skipped: npm is not installed on this machine"
    say(f"npm install ccusage@{CCUSAGE_VERSION}")
    r = subprocess.run(
        [npm, "install", "--prefix", str(prefix), f"ccusage@{CCUSAGE_VERSION}"],
        capture_output=True,
        timeout=600,
        check=False,
    )
    if r.returncode != 0 or not exe.exists():
        tail = r.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return None, f"skipped: npm install ccusage@{CCUSAGE_VERSION} failed ({tail[0]})"
    return [str(exe)], ""


def _run(ing: Ingester, args: Sequence[str], timeout_s: float) -> ProcResult:
    r = run_measured([*ing.argv, *args], timeout_s=timeout_s, env=ing.env)
    if r.returncode != 0:
        tail = " / ".join(r.stderr.decode(errors="replace").strip().splitlines()[-3:])
        raise RuntimeError(f"`ingestd {args[0]}` exit {r.returncode}: {tail}")
    return r


def _one_round(corpus: Corpus, ing: Ingester, fig: Figures, timeout_s: float) -> None:
    db = CACHE / "dbs" / "sidebyside" / ing.label.replace(" ", "-") / "ingestd.db"
    fresh_db(db)
    ingest = ["ingest", "--projects", str(corpus.projects), "--db", str(db), "--json"]
    cold = _run(ing, ingest, timeout_s)
    fig.cold.append(cold.wall_s)
    fig.cold_cpu.append(cold.cpu_s)
    fig.cold_rss.append(max(cold.tree_rss_mb, cold.maxrss_mb))
    fig.db_bytes.append(db_size_bytes(db))
    fig.totals_ok = check_totals(corpus.truth, bucket_totals(db)).ok
    fig.restart.append(_run(ing, ingest, timeout_s).wall_s)
    rep = _run(ing, ["replay", "--db", str(db), "--json"], timeout_s)
    fig.replay.append(rep.wall_s)
    fig.replay_rss.append(max(rep.tree_rss_mb, rep.maxrss_mb))
    fig.cost.append(_run(ing, ["cost", "--db", str(db), "--json"], 120).wall_s)


def turn(ingesters: Sequence[Ingester], n: int) -> list[Ingester]:
    """The order the ingesters run in round ``n`` (0-based): as given, reversed every second round.
    Whichever ran second in a round was measured slower (the other's leftovers in the page cache
    and the allocator, the CPU's clock), which biased every pair against the second column."""
    return list(ingesters) if n % 2 == 0 else list(reversed(ingesters))


def measure(
    corpus: Corpus, ingesters: Sequence[Ingester], rounds: int, ccusage: list[str] | None, note: str
) -> SideBySide:
    """``rounds`` interleaved rounds of every figure over ``corpus``."""
    res = SideBySide(corpus, rounds, ccusage_note=note)
    res.figures = {i.label: Figures() for i in ingesters}
    res.load.append(machine.loadavg())
    warm_page_cache(corpus.projects)
    timeout_s = max(300.0, corpus.mb * 1.0)
    for n in range(rounds):
        say(f"{corpus.name} round {n + 1}/{rounds}: floor")
        fl = orjson_floor(corpus.projects)
        res.floor.append(fl.wall_s)
        res.floor_cpu.append(fl.cpu_s)
        if ccusage is not None:
            env = {**os.environ, "CLAUDE_CONFIG_DIR": str(corpus.root)}
            r = run_measured([*ccusage, "daily", "--json", "--offline"], timeout_s=timeout_s, env=env)
            if r.returncode == 0:
                res.ccusage.append(r.wall_s)
                res.ccusage_rss.append(max(r.tree_rss_mb, r.maxrss_mb))
            else:
                ccusage = None
                res.ccusage_note = f"failed: exit {r.returncode} {r.stderr.decode(errors='replace')[-200:]}"
        for ing in turn(ingesters, n):
            fig = res.figures[ing.label]
            if fig.error:
                continue
            say(f"{corpus.name} round {n + 1}/{rounds}: {ing.label}")
            try:
                _one_round(corpus, ing, fig, timeout_s)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                fig.error = str(e)
    res.load.append(machine.loadavg())
    return res


def _med(xs: Sequence[float]) -> float:
    return summarize(xs).median


def _cell(xs: Sequence[float], floor: float, unit: str = "s", ratio: bool = True) -> str:
    if not xs:
        return "–"
    s = summarize(xs)
    scale, u = (1000.0, "ms") if unit == "s" and s.median < 1 else (1.0, unit)
    text = f"{fmt_num(s.median * scale)} {u}"
    if s.runs > 1:
        text += f" ({fmt_num(s.low * scale)}–{fmt_num(s.high * scale)})"
    if ratio and floor:
        text += f", **{s.median / floor:.2f}x**"
    return text


def _row(out: list[str], name: str, cells: list[str]) -> None:
    out.append(f"| {name} | " + " | ".join(cells) + " |")


def render(results: Sequence[SideBySide], command: str, when: str) -> str:
    """The markdown section (pure): one table per corpus, a row per figure, a column per ingester."""
    out = [
        BEGIN,
        "## Side by side, one run",
        "",
        f"Measured {when} by `{command}`. Each cell: median wall of the rounds (range), and in bold the ratio "
        "to the median orjson floor of the same run. Rounds are interleaved (floor, ccusage, then each "
        "ingester's cold ingest, restart, replay, `cost --json`), so load from other work on this shared "
        "2-core machine falls on every column alike. Targets (SPEC §11): cold ingest ≤ 5x the floor "
        "(2.5x beyond it), replay ≤ 1.2x the cold ingest, peak memory < 300 MB, restart "
        "< 0.5 s at 1 GB, database ≤ 0.34x the corpus.",
        "",
    ]
    for r in results:
        floor = _med(r.floor) if r.floor else 0.0
        labels = list(r.figures)
        out.append(
            f"### {r.corpus.name}: {r.corpus.bytes / 1e6:,.0f} MB, {r.rounds} rounds; load average {' → '.join(r.load)}"
        )
        out.append("")
        out.append("| figure | " + " | ".join(labels) + " |")
        out.append("|---|" + "---|" * len(labels))
        out.append(
            "| orjson.loads of every line, one core (the floor) | "
            + " | ".join([_cell(r.floor, floor)] * 1 + ["″"] * (len(labels) - 1))
            + " |"
        )
        if r.ccusage:
            cc = _cell(r.ccusage, floor) + f", peak {fmt_num(max(r.ccusage_rss))} MiB"
        else:
            cc = r.ccusage_note or "skipped"
        out.append(
            f"| ccusage {CCUSAGE_VERSION} `daily --json` (native, stores nothing) | "
            + " | ".join([cc] + ["″"] * (len(labels) - 1))
            + " |"
        )

        figs = [r.figures[k] for k in labels]
        _row(out, "`ingestd ingest`, cold", [_cell(f.cold, floor) for f in figs])
        floor_cpu = _med(r.floor_cpu) if r.floor_cpu else 0.0
        _row(
            out,
            f"cold ingest CPU (user+sys; ratio to the floor's CPU, {fmt_num(floor_cpu)} s)",
            [_cell(f.cold_cpu, floor_cpu) for f in figs],
        )
        _row(out, "cold ingest peak memory", [f"{fmt_num(max(f.cold_rss))} MiB" if f.cold_rss else "–" for f in figs])
        _row(out, "`ingestd ingest`, restart over the unchanged corpus", [_cell(f.restart, floor) for f in figs])
        _row(out, "`ingestd replay`", [_cell(f.replay, floor) for f in figs])
        _row(
            out,
            "replay / cold ingest",
            [f"{_med(f.replay) / _med(f.cold):.2f}x" if f.replay and f.cold else "–" for f in figs],
        )
        _row(out, "replay peak memory", [f"{fmt_num(max(f.replay_rss))} MiB" if f.replay_rss else "–" for f in figs])
        _row(out, "`ingestd cost --json` (CLI wall)", [_cell(f.cost, floor, ratio=False) for f in figs])
        _row(
            out,
            "database size / corpus",
            [
                f"{f.db_bytes[-1] / 1e6:,.0f} MB, {f.db_bytes[-1] / r.corpus.bytes:.2f}x" if f.db_bytes else "–"
                for f in figs
            ],
        )
        _row(
            out,
            "token totals vs ground_truth.json",
            ["equal" if f.totals_ok else ("–" if f.totals_ok is None else "**differ**") for f in figs],
        )
        errors = [f"{k}: {f.error}" for k, f in r.figures.items() if f.error]
        out.append("")
        out += [f"- error: {e}" for e in errors]
        if errors:
            out.append("")
    out.append(END)
    return "\n".join(out) + "\n"


def section_of(text: str) -> str:
    """The side-by-side section of an existing BENCHMARKS.md ("" when it has none)."""
    return marked_section(text, BEGIN, END)


def splice(old: str, section: str) -> str:
    """``old`` with its side-by-side section replaced by ``section`` (appended after the figures when absent)."""
    if BEGIN in old and END in old:
        return old[: old.index(BEGIN)] + section + old[old.index(END) + len(END) + 1 :]
    marker = "<!-- framing:"
    if marker in old:
        i = old.index(marker)
        return old[:i] + section + "\n" + old[i:]
    return old + ("\n" if old else "") + section


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.sidebyside", description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", action="append", choices=sorted(CORPORA), help="repeatable; default c100")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--src",
        action="append",
        metavar="LABEL=DIR",
        help="an ingestd source tree measured as a column (repeatable), e.g. main=/tmp/main-src;"
        " default: this checkout's ingestd",
    )
    ap.add_argument("--no-ccusage", action="store_true")
    ap.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    args = ap.parse_args(argv)
    ingesters = []
    for spec in args.src or []:
        label, _, src = spec.partition("=")
        env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
        compile_package(Path(src).resolve())
        ingesters.append(Ingester(label, (sys.executable, "-P", "-m", "ingestd"), env))
    if not ingesters:
        compile_package()
        ingesters.append(Ingester("this checkout", (ingestd_exe(),)))
    if args.no_ccusage:
        cc, note = None, "skipped (--no-ccusage)"
    else:
        cc, note = ensure_ccusage(CACHE / "ccusage")
    results = []
    for name in args.corpus or ["c100"]:
        mb, seed = CORPORA[name]
        results.append(measure(ensure_corpus(name, mb, seed), ingesters, args.rounds, cc, note))
    cmd = "python -m bench.sidebyside " + " ".join(argv if argv is not None else sys.argv[1:])
    section = render(results, cmd.strip(), datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    old = args.out.read_text() if args.out.exists() else ""
    args.out.write_text(splice(old, section))
    print(section)
    return 1 if any(f.totals_ok is False for r in results for f in r.figures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
