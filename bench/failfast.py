"""``ingestd serve`` with its port taken: how long until it says so and exits 2.

The lock and the port are checked before any database work, so the figure is interpreter start-up,
imports and one ``bind``, whatever the backfill waiting behind it. ``python -m bench.failfast DIR``
measures it alone against the projects tree ``DIR``.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path

from bench.proc import ingestd_exe, run_measured
from bench.stats import summarize


def measure_busy_port(projects: Path, runs: int) -> tuple[list[float], str]:
    """Walls (s) of ``ingestd serve --projects PROJECTS`` on a taken port; an exit other than 2 is the note."""
    out: list[float] = []
    with socket.socket() as taken, tempfile.TemporaryDirectory(prefix="ingestd-failfast-") as tmp:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for i in range(runs):
            db = Path(tmp) / f"{i}.db"
            argv = [ingestd_exe(), "serve", "--db", str(db), "--projects", str(projects), "--port", str(port)]
            r = run_measured(argv, timeout_s=120, sample_tree=False, env={**os.environ})
            if r.returncode != 2 or db.exists():
                return out, f"exit {r.returncode} (database created: {db.exists()}): {r.stderr.decode()[-300:]}"
            out.append(r.wall_s)
    return out, ""


def main(argv: list[str]) -> int:
    projects = Path(argv[0]) if argv else Path.home() / ".claude" / "projects"
    walls, note = measure_busy_port(projects, runs=10)
    if note:
        print(note, file=sys.stderr)
        return 1
    s = summarize(walls)
    print(f"busy port: {s.median * 1000:.0f} ms ({s.low * 1000:.0f}-{s.high * 1000:.0f}, {len(walls)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
