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
from pathlib import Path

import orjson
import pytest

from tests.reliability.daemon import Daemon, Load, build_history, settle_and_verify
from tests.reliability.support import q
from tests.support import free_port, wait_for


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
        wait_for("the daemon's catch-up to be under way", lambda: jsonl_rows(d.db) > 0)
        ingests = [threading.Thread(target=one_shot) for _ in range(2)]
        for t in ingests:
            t.start()
        for t in ingests:
            t.join(90)
        acked = len(load.acked)
        wait_for("hook deliveries after the ingests", lambda: len(load.acked) > acked + 20)
    finally:
        load.finish()
    settle_and_verify(d, load, tmp_path / "replay", min_acked=20)
    assert len(results) == 2
    for r in results:
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        assert orjson.loads(r.stdout)["files"] >= 3, r.stdout[-2000:]  # the history, at least


def jsonl_rows(db: Path) -> int:
    return int(q(db, "SELECT count(*) FROM events_raw WHERE source = 'jsonl'")[0][0])
