"""The machine a benchmark ran on: CPU model, cores, memory, Python and SQLite versions."""

from __future__ import annotations

import contextlib
import os
import platform
import sqlite3
import sys


def cpu_model() -> str:
    """``model name`` from /proc/cpuinfo (else the platform's processor string)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total_gib() -> float:
    """``MemTotal`` from /proc/meminfo in GiB (0 when unreadable)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def versions() -> dict[str, str]:
    """Python, SQLite (as apsw links it, and the stdlib's), apsw, orjson, aiohttp."""
    out = {"python": sys.version.split()[0], "sqlite (stdlib sqlite3)": sqlite3.sqlite_version}
    try:
        import apsw

        out["sqlite (apsw)"] = apsw.sqlite_lib_version()
        out["apsw"] = apsw.apsw_version()
    except ImportError:
        pass
    for mod in ("orjson", "aiohttp"):
        with contextlib.suppress(ImportError, AttributeError):
            out[mod] = __import__(mod).__version__
    return out


def loadavg() -> str:
    """The 1/5/15-minute load averages (other work on the machine shows here)."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def describe() -> list[tuple[str, str]]:
    """Rows for the machine table of BENCHMARKS.md."""
    rows = [
        ("CPU", cpu_model()),
        ("cores", str(os.cpu_count())),
        ("memory", f"{mem_total_gib():.1f} GiB"),
        ("OS", f"{platform.system()} {platform.release()}"),
        ("load average at start (1/5/15 min)", loadavg()),
    ]
    rows += [(k, v) for k, v in versions().items()]
    return rows
