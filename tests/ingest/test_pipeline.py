"""The pipelined backfill: a writer thread, the same rows, projections and log as sequential."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import zstandard

from ingestd.core.touch import Ctx
from ingestd.errors import StorageError
from ingestd.ingest import readfile
from ingestd.ingest.backfill import ingest_roots
from ingestd.ingest.pipeline import WriterPipe
from ingestd.store import payload
from tests.ingest.support import dump, new_db, refuse_second_batch

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "projects"
CORPUS = REPO.parent / "shared" / "corpus" / "claude-projects"
NOW = "2026-03-01T00:00:00.000Z"
CTX = Ctx(instance="i", host_id="h")
LOG = "SELECT id, idempotency_key, source, event_type, payload, session_id, origin, origin_offset FROM events_raw"
CODECS = "SELECT id, kind, dictionary, created_at FROM payload_codecs ORDER BY id"
BLOCKS = "SELECT id, codec, data FROM payload_blocks ORDER BY id"
CHECKPOINTS = "SELECT root, origin, committed_offset, size, head_hash FROM ingest_checkpoints ORDER BY 1, 2"


def test_pipe_applies_in_order_on_one_other_thread() -> None:
    seen: list[tuple[int, str]] = []

    def apply(i: int) -> None:
        time.sleep(0.001 * (i % 3))  # uneven work must not reorder
        seen.append((i, threading.current_thread().name))

    pipe: WriterPipe[int] = WriterPipe(apply)
    for i in range(50):
        pipe.put(i)
    pipe.close()
    assert [i for i, _ in seen] == list(range(50))
    assert {name for _, name in seen} == {"ingest-writer"}


def test_pipe_failure_stops_later_items_and_is_raised() -> None:
    applied: list[int] = []
    release = threading.Event()

    def apply(i: int) -> None:
        if i == 3:
            release.wait(10)
            raise ValueError("refused")
        applied.append(i)

    pipe: WriterPipe[int] = WriterPipe(apply)
    for i in range(5):  # put(4) returns once 3 was taken: 4 waits in the slot while 3 fails
        pipe.put(i)
    release.set()
    with pytest.raises(ValueError, match="refused"):
        for i in range(5, 20):
            pipe.put(i)
        pipe.close()
    pipe.close()  # closing again waits, raises nothing more
    assert applied == [0, 1, 2]


def test_pipe_prepares_an_item_once_the_writer_took_the_one_before() -> None:
    events: list[str] = []
    release = threading.Event()

    def apply(i: int) -> None:
        events.append(f"apply {i}")
        if i == 0:
            release.wait(10)
        events.append(f"applied {i}")

    def prepare(i: int) -> int:
        events.append(f"prepare {i} on {threading.current_thread().name}")
        return i * 10

    pipe: WriterPipe[int] = WriterPipe(apply)
    pipe.put(0)
    pipe.put(1, prepare)  # 0 taken (being applied): prepared at once, then waits in the slot
    threading.Timer(0.2, release.set).start()
    pipe.put(2, prepare)  # prepared only once 10 is taken, i.e. after 0 was applied
    pipe.close()
    me = threading.current_thread().name
    at = {e: n for n, e in enumerate(events)}
    assert at[f"prepare 1 on {me}"] < at["applied 0"]  # 0 taken: 1 is prepared while 0 is applied
    assert at["applied 0"] < at[f"prepare 2 on {me}"]  # 10 still in the slot until 0 was applied
    assert [e for e in events if e.startswith("appl")] == [
        "apply 0",
        "applied 0",
        "apply 10",
        "applied 10",
        "apply 20",
        "applied 20",
    ]


def test_wait_free_returns_once_the_writer_took_every_item() -> None:
    """``wait_free`` (the reader process's feed: at most two batches in the writing process) blocks
    while an item waits in the slot and returns as soon as the writer takes it, not when it is applied."""
    events: list[str] = []
    release = [threading.Event(), threading.Event()]

    def apply(i: int) -> None:
        events.append(f"apply {i}")
        release[i].wait(10)
        events.append(f"applied {i}")

    pipe: WriterPipe[int] = WriterPipe(apply)
    pipe.put(0)
    pipe.put(1)  # waits in the slot while 0 is applied
    threading.Timer(0.2, release[0].set).start()
    pipe.wait_free()
    events.append("free")
    release[1].set()
    pipe.close()
    # free once 1 was taken, i.e. after 0 was applied; before 1 was (it waits for the release)
    assert events.index("applied 0") < events.index("free") < events.index("applied 1")
    pipe2: WriterPipe[int] = WriterPipe(lambda i: None)
    pipe2.wait_free()  # nothing handed over: returns at once
    pipe2.close()


def test_pipe_runs_a_task_ahead_on_the_writer_thread_before_the_next_item() -> None:
    seen: list[tuple[object, str]] = []
    pipe: WriterPipe[int] = WriterPipe(lambda i: seen.append((i, threading.current_thread().name)))
    pipe.run_ahead(lambda: seen.append(("task", threading.current_thread().name)))
    pipe.put(1)
    pipe.close()
    assert seen == [("task", "ingest-writer"), (1, "ingest-writer")]


def _ingest(root: Path, db: Path, **kw: Any) -> tuple[dict[str, Any], list[Any], list[Any], readfile.Summary, Any]:
    conn = new_db(db)
    s = ingest_roots(conn, [root], now=NOW, ctx=CTX, **kw)
    stored = conn.execute(CODECS).fetchall(), conn.execute(BLOCKS).fetchall()
    out = dump(conn), conn.execute(LOG).fetchall(), conn.execute(CHECKPOINTS).fetchall(), s, stored
    conn.close()
    return out


def _same(tmp_path: Path, root: Path, batch_rows: int) -> None:
    seq = _ingest(root, tmp_path / "seq.db", batch_rows=batch_rows)
    pip = _ingest(root, tmp_path / "pipe.db", batch_rows=batch_rows, pipeline=True)
    assert pip[0] == seq[0]  # every projection row
    assert pip[1] == seq[1]  # the log: ids, keys, exact bytes
    assert pip[2] == seq[2]  # checkpoints
    assert pip[4] == seq[4]  # the dictionary (trained ahead when pipelined) and the blocks, byte for byte
    a, b = seq[3], pip[3]
    assert (a.rows_inserted, a.lines, a.skipped, a.recovered, a.sessions, a.messages) == (
        b.rows_inserted,
        b.lines,
        b.skipped,
        b.recovered,
        b.sessions,
        b.messages,
    )


def test_pipelined_ingest_equals_sequential_fixtures(tmp_path: Path) -> None:
    # batches of 7 rows: many hand-offs, mid-file checkpoints, the writer behind the reader
    _same(tmp_path, FIXTURES, 7)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus absent: {CORPUS}")
def test_pipelined_ingest_equals_sequential_real_corpus(tmp_path: Path) -> None:
    _same(tmp_path, CORPUS, 500)


def test_pipelined_ingest_storage_error_stops_and_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = refuse_second_batch(monkeypatch)
    conn = new_db(tmp_path / "x.db")
    with pytest.raises(StorageError, match="disk full"):
        ingest_roots(conn, [FIXTURES], now=NOW, ctx=CTX, batch_rows=5, pipeline=True)
    # only the first batch committed, with its checkpoint; nothing past the refused batch
    n: Any = conn.execute("SELECT count(*) FROM events_raw").fetchall()[0][0]
    assert n == calls[0]
    last = "SELECT origin, origin_offset + length(payload_bytes(codec, payload)) + 1 FROM events_raw ORDER BY id DESC"
    (origin, end) = conn.execute(last).fetchall()[0]
    assert [(o, c) for _, o, c, _, _ in conn.execute(CHECKPOINTS).fetchall()] == [(origin, end)]


def test_a_broken_hand_off_is_raised_not_counted_as_unreadable_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C during an ingest with the reader process broke its pipe: each remaining file was then
    # logged `file_unreadable: Broken pipe` (237 lines) before the run stopped
    calls = []

    def broken(*args: Any) -> None:
        calls.append(args)
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(readfile, "read_file", broken)
    conn = new_db(tmp_path / "x.db")
    with pytest.raises(BrokenPipeError):
        ingest_roots(conn, [REPO / "fixtures" / "projects"], now="2026-03-01T00:00:00.000Z")
    assert len(calls) == 1


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus absent: {CORPUS}")
def test_pipelined_ingest_trains_before_the_first_transaction_and_compresses_on_the_reading_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a new database: the first batch's dictionary is trained while the batch is read, on the
    # writer thread before its first transaction (it waits for that batch anyway); that batch's
    # blocks and every later batch's are compressed on the reading thread when handed over (zstd
    # releases the GIL: it overlaps the writer); no transaction trains or compresses
    calls: list[tuple[str, int]] = []  # (thread, batches applied when called)
    trained: list[tuple[str, int]] = []
    applied = [0]
    real_compress, real_apply = payload.Codecs.compress, readfile.Batcher._apply
    real_train = zstandard.train_dictionary

    def compress(self: payload.Codecs, data: bytes) -> tuple[int, bytes]:
        calls.append((threading.current_thread().name, applied[0]))
        return real_compress(self, data)

    def apply(self: readfile.Batcher, batch: readfile.Batch) -> None:
        applied[0] += 1
        real_apply(self, batch)

    def train(*args: Any, **kw: Any) -> Any:
        trained.append((threading.current_thread().name, applied[0]))
        return real_train(*args, **kw)

    monkeypatch.setattr(payload.Codecs, "compress", compress)
    monkeypatch.setattr(readfile.Batcher, "_apply", apply)
    monkeypatch.setattr(zstandard, "train_dictionary", train)
    _ingest(CORPUS, tmp_path / "pipe.db", batch_rows=2500, pipeline=True)
    assert applied[0] >= 3
    assert trained == [("ingest-writer", 0)]  # before its first batch, while the batch is read
    assert {t for t, _ in calls} == {"MainThread"}, sorted(set(calls))
    assert {n for _, n in calls} >= set(range(applied[0])), sorted(set(calls))


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus absent: {CORPUS}")
def test_a_first_batch_too_small_to_train_early_is_trained_when_handed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fewer than TRAIN_ROWS lines in the first batch (500): trained on the reading thread at the hand-off
    # (not on the writer), the same dictionary as the sequential path's
    trained: list[str] = []
    real_train = zstandard.train_dictionary

    def train(*args: Any, **kw: Any) -> Any:
        trained.append(threading.current_thread().name)
        return real_train(*args, **kw)

    monkeypatch.setattr(zstandard, "train_dictionary", train)
    pip = _ingest(CORPUS, tmp_path / "pipe.db", batch_rows=500, pipeline=True)
    assert trained == ["MainThread"]
    seq = _ingest(CORPUS, tmp_path / "seq.db", batch_rows=500)
    assert trained == ["MainThread", "MainThread"]  # the sequential path: in its transaction
    assert pip[4] == seq[4] and pip[1] == seq[1]
