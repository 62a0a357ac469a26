"""The hand-off to the writer process: rows queued while it commits travel together, in one frame,
when it answers (not a write to the socket, and a read there, per turn of the loop)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

import apsw

from ingestd.core.records import NewLogRow
from ingestd.daemon import apply as apply_mod
from ingestd.daemon.committer import ApplyFn
from ingestd.daemon.writerproc import ProcCommitter
from tests.daemon.test_writerproc import _hook, _tables
from tests.support import log_rows


def slow_store() -> ApplyFn:
    """An ``ApplyFn`` (built in the writer process) that takes 0.3 s per transaction."""
    store = apply_mod.make_store()

    def apply(conn: apsw.Connection, rows: Sequence[NewLogRow]) -> int:
        time.sleep(0.3)
        return store(conn, rows)

    return apply


async def test_rows_queued_while_the_process_commits_go_in_one_frame(tmp_path: Path) -> None:
    w = ProcCommitter(tmp_path / "w.db", make_apply=slow_store, log_level="warning")
    await w.open(asyncio.get_running_loop())
    first = asyncio.ensure_future(w.submit([_hook(0)]))
    await asyncio.sleep(0.05)  # sent: the process is committing it
    later = []
    for i in range(1, 41):  # one delivery per turn of the loop, as HTTP requests come
        later.append(asyncio.ensure_future(w.submit([_hook(i)])))
        await asyncio.sleep(0)
    assert w.writes == 1  # the 40 wait for the process's answer
    assert await first == 1 and await asyncio.gather(*later) == [40] * 40  # the rows of their one transaction
    assert w.writes == 2 and w.committed_batches == 2  # then travel (and commit) together
    await asyncio.get_running_loop().run_in_executor(None, w.stop)
    assert log_rows(tmp_path / "w.db") == 41


async def test_a_call_queued_behind_waiting_rows_is_answered(tmp_path: Path) -> None:
    w = ProcCommitter(tmp_path / "w.db", make_apply=slow_store, log_level="warning")
    await w.open(asyncio.get_running_loop())
    first = asyncio.ensure_future(w.submit([_hook(0)]))
    await asyncio.sleep(0.05)
    rows = asyncio.ensure_future(w.submit([_hook(1)]))
    await asyncio.sleep(0)
    n = await w.call(_count)
    assert await first == 1 and await rows == 1 and n == 2  # the call ran after both rows, in order
    await asyncio.get_running_loop().run_in_executor(None, w.stop)
    assert _tables(tmp_path / "w.db")["events_raw"]


def _count(conn: apsw.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM events_raw").fetchone()[0])
