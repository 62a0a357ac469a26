"""Generated corpora (cached under ``bench/cache/``) and the orjson floor measured on them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.proc import REPO

GEN = Path(os.environ.get("INGESTD_BENCH_GEN", "/work/shared/tools/gen_corpus.py"))
if not GEN.exists():
    GEN = REPO.parent / "shared" / "tools" / "gen_corpus.py"
CACHE = REPO / "bench" / "cache"


@dataclass(frozen=True, slots=True)
class Corpus:
    """A generated corpus on disk.

    Attributes:
        name: str, e.g. ``c100``.
        root: Path, the generator's ``--out``.
        projects: Path, the projects root inside it (``root/projects``).
        mb: int, the requested size (MB, 1e6 bytes).
        seed: int, the generator seed.
        truth: dict, the parsed ``ground_truth.json``.
    """

    name: str
    root: Path
    projects: Path
    mb: int
    seed: int
    truth: dict[str, Any]

    @property
    def bytes(self) -> int:
        """Total bytes of the ``.jsonl`` files."""
        return int(self.truth["corpus"]["jsonl_bytes"])

    @property
    def command(self) -> str:
        """The exact command that generated it."""
        return f"python {GEN} --out bench/cache/{self.name} --mb {self.mb} --seed {self.seed}"

    def describe(self) -> str:
        """One line: files, lines, bytes, sessions, subagents."""
        c = self.truth["corpus"]
        return (
            f"{c['jsonl_files']:,} files, {c['lines']:,} lines, {c['jsonl_bytes'] / 1e6:.1f} MB, "
            f"{c['sessions']:,} sessions, {c['subagent_files']:,} subagent files, "
            f"{c['unique_usage_keys']:,} billed messages"
        )


def ensure_corpus(name: str, mb: int, seed: int) -> Corpus:
    """Generate the corpus unless its ``ground_truth.json`` already exists (the cache)."""
    root = CACHE / name
    truth_path = root / "ground_truth.json"
    if not truth_path.exists():
        print(f"bench: generating {name} ({mb} MB, seed {seed}) ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, str(GEN), "--out", str(root), "--mb", str(mb), "--seed", str(seed), "--force"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    truth = orjson.loads(truth_path.read_bytes())
    return Corpus(name=name, root=root, projects=root / "projects", mb=mb, seed=seed, truth=truth)


def jsonl_files(projects: Path) -> list[Path]:
    """Every ``.jsonl`` under the projects root, sorted (a stable order)."""
    return sorted(projects.rglob("*.jsonl"))


def iter_lines(projects: Path) -> Iterator[bytes]:
    """Every line (without its newline) of every transcript."""
    for path in jsonl_files(projects):
        yield from path.read_bytes().split(b"\n")


def warm_page_cache(projects: Path) -> int:
    """Read every transcript once so the timings that follow see files in the page cache; returns bytes."""
    return sum(len(p.read_bytes()) for p in jsonl_files(projects))


@dataclass(frozen=True, slots=True)
class FloorRun:
    """One pass of ``orjson.loads`` over every line.

    Attributes:
        wall_s: float, seconds (read + split + loads, one core, files in the page cache).
        cpu_s: float, process CPU seconds over the same pass.
        lines: int, lines parsed as JSON.
        bad_lines: int, lines orjson refused (torn tails the generator leaves on purpose).
    """

    wall_s: float
    cpu_s: float
    lines: int
    bad_lines: int


def orjson_floor(projects: Path) -> FloorRun:
    """The CPU floor for a Python ingester (SPEC §11): ``orjson.loads`` of every line, one core."""
    files = jsonl_files(projects)
    loads = orjson.loads
    ok = bad = 0
    c0, t0 = time.process_time(), time.perf_counter()
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        for line in data.split(b"\n"):
            if not line:
                continue
            try:
                loads(line)
                ok += 1
            except orjson.JSONDecodeError:
                bad += 1
    return FloorRun(time.perf_counter() - t0, time.process_time() - c0, ok, bad)
