"""The reader process's memory (issue 14): a session the worker has no fold state for is left to
the writer (folding ahead goes on for the others), and both processes' malloc gives freed memory back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ingestd.core import projector
from ingestd.ingest import worker
from ingestd.store import writer
from tests.ingest.test_worker import FIXTURES, REPO, _both, _spy_prefolds


def _spy_left(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The sessions each prefold the writer was given left to it to fold (``str`` parts), in order."""
    left: list[list[str]] = []
    real = writer._prefold_holds

    def spy(pre: writer.Prefold, *a: Any) -> bool:
        left.append([p for p in pre.changes if isinstance(p, str)])
        return real(pre, *a)

    monkeypatch.setattr(writer, "_prefold_holds", spy)
    return left


@pytest.mark.parametrize(("kept", "writer_folds"), [(0, True), (1, False)])
def test_the_workers_fold_states_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: int, writer_folds: bool
) -> None:
    """The worker keeps at most ``PREFOLD_STATES`` fold states; a session met again after its state
    was evicted is left to the writer (folded there from the log) and folding ahead goes on for the
    others: every batch is still written from its prefold, and the result is unchanged."""
    monkeypatch.setattr(worker, "PREFOLD_STATES", kept)  # before the fork: the worker inherits it
    verdicts = _spy_prefolds(monkeypatch)
    left = _spy_left(monkeypatch)
    _both(tmp_path, FIXTURES, batch_rows=7)
    # the fixtures make 4 batches. Keeping none, every session that spans two batches is the
    # writer's from its second; keeping one, none is: a session's files are read one after the other
    assert len(verdicts) == 4 and all(verdicts)
    assert any(left) is writer_folds and not left[0]


def test_a_session_whose_fold_needs_the_log_is_left_to_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold the worker cannot make (a refold reads the session's log, which only the writer has)
    leaves that session to the writer for the rest of the run; the other sessions are still folded
    ahead and the result is the sequential one."""
    real = projector.fold
    asked: list[str] = []

    def fold(state: Any, sid: str, rows: Any, ctx: Any, history: Any) -> Any:
        if history is worker._no_history and rows[0].id > 7 and not asked:
            asked.append(sid)
            history()  # as a refold would: raises in the worker
        return real(state, sid, rows, ctx, history)

    monkeypatch.setattr(projector, "fold", fold)  # the worker inherits it (fork)
    verdicts = _spy_prefolds(monkeypatch)
    left = _spy_left(monkeypatch)
    _both(tmp_path, FIXTURES, batch_rows=7)
    assert len(verdicts) == 4 and all(verdicts)
    assert [sids for sids in left if sids]  # the session was named for the writer (its id is the worker's)


_LEAN = """
import sys
from ingestd.ingest import worker
def rss():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) >> 10 for line in fh if line.startswith("VmRSS"))
if sys.argv[1] == "lean":
    worker.lean_malloc()
big = b"x" * (16 << 20)
del big  # glibc's default now keeps blocks up to 16 MiB in its heap instead of mapping them apart
base = rss()
pairs = [(b"x" * (1 << 20), b"y" * 20_000) for _ in range(64)]
pins = [pin for _, pin in pairs]  # a live small block after each megabyte: none is at a heap's top
del pairs
print(rss() - base)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt, /proc")
def test_lean_malloc_gives_freed_batches_back() -> None:
    """After ``lean_malloc`` (the reader process's two processes), 64 MiB of megabyte blocks freed
    between live ones go back to the system; glibc's default, once a 16 MiB block (a pickled
    batch) was freed, keeps them (the writing process's peak grew by every batch's garbage)."""

    def kept(mode: str) -> int:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}  # glibc's defaults
        run = [sys.executable, "-c", _LEAN, mode]
        out = subprocess.run(run, capture_output=True, text=True, check=True, cwd=REPO, env=env)
        return int(out.stdout)

    assert kept("lean") < 8
    assert kept("default") > 48


def test_the_page_cache_is_smaller_while_a_reader_process_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes share the 300 MB: the writing connection's page cache is ``READER_CACHE_KIB``
    while the reader process runs, and as it was after (the threaded path keeps it)."""
    from ingestd.ingest import backfill
    from ingestd.store.connection import WRITER_CACHE_KIB
    from tests.ingest.support import new_db
    from tests.ingest.test_worker import _ingest

    seen: list[int] = []
    real = worker.ReaderProcess.feed

    def feed(self: worker.ReaderProcess, b: Any, progress: Any) -> None:
        seen.append(int(b.conn.execute("PRAGMA cache_size").fetchall()[0][0]))
        real(self, b, progress)

    monkeypatch.setattr(worker.ReaderProcess, "feed", feed)
    conn = new_db(tmp_path / "x.db")
    assert conn.execute("PRAGMA cache_size").fetchall()[0][0] == -WRITER_CACHE_KIB
    _ingest(conn, FIXTURES, reader_process=True)
    assert seen == [-backfill.READER_CACHE_KIB] and backfill.READER_CACHE_KIB < WRITER_CACHE_KIB
    assert conn.execute("PRAGMA cache_size").fetchall()[0][0] == -WRITER_CACHE_KIB
    conn.close()
