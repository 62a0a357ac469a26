"""Running measured subprocesses: wall time, CPU time, peak RSS.

Wall time is ``time.perf_counter`` around the child's whole life. CPU (user+sys) and the peak RSS come from
``os.wait4``: the rusage of that one child including the descendants it waited for (the same figures
``resource.getrusage(RUSAGE_CHILDREN)`` accumulates, but per child, so one run does not contaminate the next).
``ru_maxrss`` is the peak of the largest single process; a sampler thread also sums the RSS of the whole
process tree from ``/proc`` every few milliseconds, for a multi-process ingester.
"""

from __future__ import annotations

import compileall
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def compile_package(tree: Path = REPO) -> None:
    """Compile ``tree``'s ``ingestd`` package to bytecode (``__pycache__``), as installing it does, so a
    measured start-up does not compile it: an editable install under ``PYTHONDONTWRITEBYTECODE``
    (set on some machines) would otherwise compile every module in every run (0.15 s of an empty
    ``ingest``). Writes ``.pyc`` files beside the sources."""
    compileall.compile_dir(str(tree / "ingestd"), quiet=1)


def ingestd_exe() -> str:
    """The ``ingestd`` console script next to this interpreter, else the one on PATH."""
    local = VENV_BIN / "ingestd"
    if local.exists():
        return str(local)
    found = shutil.which("ingestd")
    return found or "ingestd"


@dataclass(frozen=True, slots=True)
class ProcResult:
    """One finished subprocess.

    Attributes:
        argv: list[str], what ran.
        returncode: int.
        wall_s: float, seconds from spawn to reap.
        cpu_s: float, user+sys seconds of the child and its reaped descendants.
        maxrss_mb: float, peak RSS of the largest single process (MiB, from ru_maxrss).
        tree_rss_mb: float, peak of the sampled RSS sum over the process tree (MiB; 0 when not sampled).
        voluntary_cs: int, voluntary context switches (the process blocked: I/O, fsync, locks).
        involuntary_cs: int, involuntary context switches (preempted: another process wanted the core).
        stdout: bytes.
        stderr: bytes.
    """

    argv: list[str]
    returncode: int
    wall_s: float
    cpu_s: float
    maxrss_mb: float
    tree_rss_mb: float
    voluntary_cs: int
    involuntary_cs: int
    stdout: bytes
    stderr: bytes


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            continue
    return out


def _tree_rss_bytes(root: int) -> int:
    """RSS sum of ``root`` and its descendants (0 where /proc is unreadable).

    Walks ``/proc/PID/task/TID/children`` from the root only, so the sampler stays cheap (it shares the
    2 cores with what it measures).
    """
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += _rss_bytes(pid)
        stack.extend(_children(pid))
    return total


class _Sampler(threading.Thread):
    def __init__(self, pid: int, interval_s: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval_s, self.peak = pid, interval_s, 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, _tree_rss_bytes(self.pid))
            self.stop.wait(self.interval_s)


def run_measured(
    argv: Sequence[str], *, timeout_s: float, sample_tree: bool = True, env: dict[str, str] | None = None
) -> ProcResult:
    """Run ``argv`` to completion and measure it.

    Raises:
        subprocess.TimeoutExpired: it ran longer than ``timeout_s`` (the child is killed first).
    """
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=env)
    sampler = _Sampler(proc.pid, 0.05) if sample_tree else None
    if sampler:
        sampler.start()
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [
        threading.Thread(target=lambda: out.append(proc.stdout.read() if proc.stdout else b""), daemon=True),
        threading.Thread(target=lambda: err.append(proc.stderr.read() if proc.stderr else b""), daemon=True),
    ]
    for t in readers:
        t.start()
    deadline = start + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            raise subprocess.TimeoutExpired(list(argv), timeout_s)
        time.sleep(0.002)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if sampler:
        sampler.stop.set()
        sampler.join()
    for t in readers:
        t.join()
    return ProcResult(
        argv=list(argv),
        returncode=proc.returncode,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        maxrss_mb=usage.ru_maxrss / 1024,
        tree_rss_mb=(sampler.peak / 2**20) if sampler else 0.0,
        voluntary_cs=usage.ru_nvcsw,
        involuntary_cs=usage.ru_nivcsw,
        stdout=out[0] if out else b"",
        stderr=err[0] if err else b"",
    )


def children_maxrss_mb() -> float:
    """``RUSAGE_CHILDREN`` peak RSS so far (MiB): the largest single reaped child of this process."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def self_maxrss_mb() -> float:
    """This process's own peak RSS (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
