"""The tailer reads at ``INGEST_NICE`` but writes at the daemon's priority.

A write transaction run at nice 10 crawled on a busy machine while it held SQLite's write lock,
and the hooks waiting behind it were answered 503. Every write of the tailer (the batches, a
session's re-projection) must run on a thread at the priority of the thread that made the runner.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

import ingestd.ingest.backfill as backfill
import ingestd.ingest.readfile as readfile
from ingestd.daemon.ingestrun import INGEST_NICE, IngestRunner
from tests.daemon.test_ingestrun import LONG, NOW_NS, line
from tests.ingest.support import dump, new_db
from tests.ingest.test_checkpoint_trust import _drop_session

pytestmark = pytest.mark.skipif(not hasattr(os, "setpriority"), reason="per-thread nice values are Linux's")


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


class Seen:
    """The nice values of the threads that read a file, applied a batch or re-projected sessions."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: set[int] = set()
        self.applied: set[int] = set()
        self.reprojected: set[int] = set()
        read_file = readfile.read_file
        apply_isolating = readfile.apply_isolating  # type: ignore[attr-defined]
        reproject = backfill.reproject_sessions  # type: ignore[attr-defined]

        def seen_read(*a: Any, **k: Any) -> Any:
            self.read.add(_nice())
            return read_file(*a, **k)

        def seen_apply(*a: Any, **k: Any) -> Any:
            self.applied.add(_nice())
            return apply_isolating(*a, **k)

        def seen_reproject(*a: Any, **k: Any) -> Any:
            self.reprojected.add(_nice())
            return reproject(*a, **k)

        monkeypatch.setattr(readfile, "read_file", seen_read)
        monkeypatch.setattr(readfile, "apply_isolating", seen_apply)
        monkeypatch.setattr(backfill, "reproject_sessions", seen_reproject)


async def test_the_tailer_writes_at_the_daemons_priority_and_reads_lower(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = _nice()
    if own >= INGEST_NICE:
        pytest.skip(f"this process already runs at nice {own}: nothing to tell apart")
    root = tmp_path / "projects"
    (root / "-home-u-p").mkdir(parents=True)
    path = root / "-home-u-p" / f"{LONG}.jsonl"
    path.write_bytes(b"".join(line(LONG, n) for n in range(500)))
    db = tmp_path / "x.db"
    new_db(db).close()
    seen = Seen(monkeypatch)
    runner = IngestRunner(lambda: new_db(db), [root], clock=lambda: NOW_NS, batch_rows=100)
    try:
        await runner(None)  # the catch-up: five transactions
        with open(path, "ab") as f:
            f.write(line(LONG, 1000))
        await runner([path])  # an append
        # the session's projections lost: its checkpoint is distrusted and the session re-projected
        conn = new_db(db)
        _drop_session(conn, LONG)
        conn.close()
        await runner(None)
    finally:
        runner.close()
    assert seen.read == {INGEST_NICE}
    assert seen.applied == {own}
    assert seen.reprojected == {own}
    scratch = new_db(tmp_path / "scratch.db")
    assert backfill.ingest_roots(scratch, [root], now="2026-06-01T00:00:00.000Z").rows_inserted == 501
    live = new_db(db)
    assert dump(live) == dump(scratch)
