"""Where the time goes when a figure misses: py-spy samples of the measured command, top frames.

py-spy is a development tool installed into the venv by hand (``pip install py-spy``), not a project
dependency; without it the profile is skipped and BENCHMARKS.md says so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.proc import REPO

_LINE = re.compile(r":\d+\)$")  # "fn (file.py:123)" -> "fn (file.py)": aggregate per function


@dataclass(frozen=True, slots=True)
class Hotspots:
    """The heaviest frames of a sampled run.

    Attributes:
        samples: int, total samples.
        self_top: list[tuple[str, float]], frame -> share of samples where it was the leaf (0..1).
        inclusive_top: list[tuple[str, float]], frame -> share of samples where it was on the stack (0..1).
    """

    samples: int
    self_top: list[tuple[str, float]]
    inclusive_top: list[tuple[str, float]]


def _wrapper(frame: str) -> bool:
    """Frames every sample passes through (entry points, click dispatch): they say nothing."""
    return frame.startswith(("<module>", "_run_module", "main (")) or "click/" in frame or "ingestd/cli.py" in frame


def hotspots_from_collapsed(lines: Iterable[str], top: int = 12) -> Hotspots:
    """Summarize collapsed stacks (``frame;frame;frame COUNT`` per line, root first) (pure)."""
    leaf: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in lines:
        line = line.rstrip("\n")
        if not line or " " not in line:
            continue
        stack, _, n = line.rpartition(" ")
        try:
            count = int(n)
        except ValueError:
            continue
        frames = [_LINE.sub(")", f) for f in stack.split(";") if f and not f.startswith("process ")]
        if not frames:
            continue
        total += count
        leaf[frames[-1]] += count
        for f in set(frames):
            incl[f] += count
    if not total:
        return Hotspots(0, [], [])
    return Hotspots(
        total,
        [(f, c / total) for f, c in leaf.most_common(top)],
        [(f, c / total) for f, c in incl.most_common(top * 3) if not _wrapper(f)][:top],
    )


def py_spy() -> str | None:
    """The py-spy executable next to this interpreter or on PATH."""
    local = Path(sys.executable).parent / "py-spy"
    return str(local) if local.exists() else shutil.which("py-spy")


def profile_command(argv: Sequence[str], rate_hz: int = 250, timeout_s: float = 900) -> tuple[Hotspots | None, str]:
    """Run ``argv`` under ``py-spy record`` (native frames off, subprocesses followed).

    Returns:
        (hotspots, "") or (None, why not).
    """
    exe = py_spy()
    if exe is None:
        return None, "py-spy is not installed (pip install py-spy into .venv to get hotspots)"
    with tempfile.TemporaryDirectory(prefix="ingestd-prof-") as tmp:
        out = Path(tmp) / "raw.txt"
        cmd = [exe, "record", "--subprocesses", "-r", str(rate_hz), "-f", "raw", "-o", str(out), "--", *argv]
        try:
            r = subprocess.run(cmd, capture_output=True, cwd=REPO, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None, f"py-spy run exceeded {timeout_s:.0f} s"
        if not out.exists():
            return None, f"py-spy failed (exit {r.returncode}): {r.stderr.decode(errors='replace').strip()[-300:]}"
        return hotspots_from_collapsed(out.read_text(errors="replace").splitlines()), ""


@dataclass
class PidProfile:
    """py-spy attached to a running process for a fixed time (``start_pid_profile`` / ``finish``).

    Attributes:
        proc: the py-spy subprocess, or None when py-spy is missing.
        out: Path, where its raw samples go.
        why: str, why there is no profile.
    """

    proc: subprocess.Popen[bytes] | None
    out: Path
    why: str = ""

    def finish(self, timeout_s: float = 60) -> tuple[Hotspots | None, str]:
        """Wait for py-spy to stop and summarize what it saw."""
        if self.proc is None:
            return None, self.why
        try:
            _, err = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            return None, "py-spy did not stop in time"
        if not self.out.exists():
            return None, f"py-spy failed (exit {self.proc.returncode}): {err.decode(errors='replace').strip()[-300:]}"
        return hotspots_from_collapsed(self.out.read_text(errors="replace").splitlines()), ""


def start_pid_profile(pid: int, duration_s: int, out: Path, rate_hz: int = 250) -> PidProfile:
    """Attach py-spy to ``pid`` for ``duration_s`` seconds (on-CPU samples, every thread)."""
    exe = py_spy()
    if exe is None:
        return PidProfile(None, out, "py-spy is not installed (pip install py-spy into .venv to get hotspots)")
    cmd = [exe, "record", "--pid", str(pid), "--duration", str(duration_s), "-r", str(rate_hz), "-f", "raw"]
    cmd += ["-o", str(out), "--nonblocking"]
    return PidProfile(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO), out)
