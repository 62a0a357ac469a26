"""The tailer's ingest: an append costs work proportional to the new lines (SPEC §7, §11).

Work is counted, not timed: log rows folded by the projector, log rows read back to rebuild
or catch up a fold state, catch-up queries, and files looked at.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

import ingestd.store.writer as store_writer
from ingestd.core import projector
from ingestd.core.records import LogRow, NewLogRow
from ingestd.core.state import SessionState
from ingestd.core.touch import Ctx
from ingestd.daemon.ingestrun import IngestRunner
from ingestd.ingest.backfill import ingest_roots
from ingestd.projection.rebuild import rebuild_projections
from ingestd.store.connection import Db
from ingestd.store.writer import apply_batch
from tests.ingest.support import count, dump, new_db

NOW_NS = 1_780_000_000_000_000_000
SHORT = "a0000000-0000-4000-8000-000000000001"
LONG = "a0000000-0000-4000-8000-000000000002"


def line(sid: str, n: int) -> bytes:
    rec = {
        "type": "assistant",
        "sessionId": sid,
        "uuid": f"{sid[:8]}-0000-4000-8000-{n:012d}",
        "timestamp": f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
        "message": {
            "id": f"msg_{sid[-4:]}_{n:06d}",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": f"line {n}"}],
            "usage": {"input_tokens": 3, "output_tokens": 7, "cache_read_input_tokens": 100},
        },
    }
    return orjson.dumps(rec) + b"\n"


class Work:
    """Counts what the projector and the fold cache do (monkeypatched in)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folded = 0
        self.loaded = 0
        fold, load = store_writer.projector.fold, store_writer.session_rows

        def counting_fold(
            state: SessionState | None, sid: str, rows: Iterable[LogRow], ctx: Ctx, history: projector.History
        ) -> Any:
            rows = list(rows)
            self.folded += len(rows)
            return fold(state, sid, rows, ctx, history)

        def counting_load(conn: apsw.Connection, sid: str, after: int = 0, before: int | None = None) -> list[LogRow]:
            got = load(conn, sid, after, before)
            self.loaded += len(got)
            return got

        monkeypatch.setattr(store_writer.projector, "fold", counting_fold)
        monkeypatch.setattr(store_writer, "session_rows", counting_load)

    def take(self) -> tuple[int, int]:
        out = (self.folded, self.loaded)
        self.folded = self.loaded = 0
        return out


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path, IngestRunner]:
    root = tmp_path / "projects"
    (root / "-home-u-p").mkdir(parents=True)
    short = root / "-home-u-p" / f"{SHORT}.jsonl"
    long = root / "-home-u-p" / f"{LONG}.jsonl"
    short.write_bytes(line(SHORT, 0))
    long.write_bytes(b"".join(line(LONG, n) for n in range(800)))
    for n in range(50):  # other sessions: a walk of the root would look at them
        (root / "-home-u-p" / f"b0000000-0000-4000-8000-{n:012d}.jsonl").write_bytes(line(f"b{n:07d}-x", 0))
    db = tmp_path / "x.db"
    new_db(db).close()
    runner = IngestRunner(lambda: new_db(db), [root], clock=lambda: NOW_NS)
    return root, short, long, runner


async def test_append_work_does_not_grow_with_session_length(
    setup: tuple[Path, Path, Path, IngestRunner], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, short, long, runner = setup
    work = Work(monkeypatch)
    try:
        await runner(None)  # catch-up
        assert work.take()[0] == 851
        runner.cache.gap_queries = 0
        per_append: dict[str, list[tuple[int, int, int]]] = {"short": [], "long": []}
        for n in range(1, 4):
            for name, path, sid in (("short", short, SHORT), ("long", long, LONG)):
                with open(path, "ab") as f:
                    f.write(line(sid, 1000 + n))
                summary = await runner([path])
                assert summary is not None and summary.rows_inserted == 1
                per_append[name].append((*work.take(), summary.files))
        # one row folded, nothing read back from the log, one file looked at: for both sessions
        assert per_append["short"] == per_append["long"] == [(1, 0, 1)] * 3
        assert runner.cache.gap_queries == 0
    finally:
        runner.close()
    # incremental == from scratch
    scratch = new_db(tmp_path / "scratch.db")
    ingest_roots(scratch, [root], now="2026-06-01T00:00:00.000Z")
    live = Db(str(tmp_path / "x.db"))
    assert dump(live) == dump(scratch)


async def test_another_writer_is_caught_up_with_only_its_rows(
    setup: tuple[Path, Path, Path, IngestRunner], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _root, _short, long, runner = setup
    work = Work(monkeypatch)
    other = Db(str(tmp_path / "x.db"))
    try:
        await runner(None)
        work.take()
        # the hook writer (another connection) appends to the long session meanwhile
        body = orjson.dumps({"hook_event_name": "Stop", "session_id": LONG, "cwd": "/home/u/p"})
        hook = NewLogRow("h:r:test", "hook", "Stop", body, "2026-01-01T00:20:00.000Z", LONG, "hook")
        apply_batch(new_db(tmp_path / "x.db"), [hook])
        work.take()  # that writer's own fold
        with open(long, "ab") as f:
            f.write(line(LONG, 2000))
        await runner([long])
        folded, loaded = work.take()
        assert (folded, loaded) == (2, 1)  # the hook row caught up, then the new line; not the session
        assert count(other, "SELECT count(*) FROM events_raw WHERE session_id = ?", (LONG,)) == 802
        rebuilt = new_db(tmp_path / "rebuilt.db")
        rebuild_projections(other, rebuilt)
        assert dump(other) == dump(rebuilt)  # the live fold saw the hook row
    finally:
        runner.close()
        other.close()
