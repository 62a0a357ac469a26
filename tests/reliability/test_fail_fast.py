"""A busy port fails ``ingestd serve`` at once, whatever the backfill and the database.

Before, ``serve`` with its port taken read the whole start-up backfill (13 s for 287 MB),
migrated, pruned and backed up before saying ``cannot listen``. The lock and the port are now
checked first. The bound here is generous (a loaded 2-core CI machine starting Python); the
measured figure is in BENCHMARKS.md.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.daemon import build_history

BOUND_S = 5.0


@pytest.mark.timeout(60)
def test_busy_port_fails_fast_with_a_large_backfill_waiting(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    build_history(root, sessions=40, lines=2000)  # ~20 MB the old order read before failing
    db = tmp_path / "f.db"
    env = {**os.environ, "INGESTD_SCHEDULE_ENABLED": "true"}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = [sys.executable, "-m", "ingestd", "serve", "--db", str(db), "--projects", str(root)]
        t0 = time.perf_counter()
        proc = subprocess.run([*argv, "--port", str(port)], capture_output=True, env=env, timeout=50)
        elapsed = time.perf_counter() - t0
    assert proc.returncode == 2, proc.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr.decode()
    # the lock is an flock on the database file itself, so the file may exist: empty, never migrated
    assert not db.exists() or db.stat().st_size == 0, "the database was migrated before the port was checked"
    assert elapsed < BOUND_S, f"serve took {elapsed:.2f} s to report a busy port"
    print(f"busy port reported in {elapsed:.3f} s (process start included)")
