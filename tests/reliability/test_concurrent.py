"""``ingestd ingest`` while ``ingestd serve`` runs on the same database (SPEC §12).

(A second ``serve`` on one database is refused with a clear message: tested in
``tests/daemon/test_serve_process.py`` and ``tests/daemon/test_lock.py``.)

Both writers are safe together: the daemon tails and takes hooks while one-shot ingests of the
same projects root run beside it. Afterwards every 2xx is in the log once, every complete
line once, and the projections equal a replay of the log.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.reliability.daemon import Daemon, Load, build_history, free_port, verify, wait_caught_up
from tests.reliability.support import q


@pytest.mark.timeout(120)
def test_ingest_beside_a_running_daemon_duplicates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    build_history(root, 3, 1500)
    d = Daemon(tmp_path / "c.db", root, free_port(), tmp_path / "serve.log")
    d.start()
    load = Load(root, d.port)
    load.start()
    results: list[subprocess.CompletedProcess[bytes]] = []

    def one_shot() -> None:
        argv = [sys.executable, "-m", "ingestd", "ingest", "--db", str(d.db), "--projects", str(root), "--json"]
        results.append(subprocess.run(argv, capture_output=True, timeout=60))

    try:
        time.sleep(0.3)  # the daemon's catch-up is under way
        ingests = [threading.Thread(target=one_shot) for _ in range(2)]
        for t in ingests:
            t.start()
        for t in ingests:
            t.join(90)
        time.sleep(0.5)
    finally:
        load.finish()
    try:
        wait_caught_up(d.db, root)
    finally:
        assert d.stop() == 0, d.log.read_text()[-3000:]
    for r in results:
        assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert len(results) == 2
    assert len(load.acked) > 20
    keys = q(d.db, "SELECT count(*), count(DISTINCT idempotency_key) FROM events_raw")[0]
    assert keys[0] == keys[1]
    (tmp_path / "replay").mkdir()
    verify(d.db, root, load.acked, tmp_path / "replay")
