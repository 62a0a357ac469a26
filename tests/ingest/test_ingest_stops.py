"""An ingest that cannot write stops: what was committed before stays, nothing past it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingestd.core.touch import Ctx
from ingestd.errors import StorageError
from ingestd.ingest import readfile
from ingestd.ingest.backfill import ingest_roots
from tests.ingest.support import new_db, refuse_second_batch

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "projects"
NOW = "2026-03-01T00:00:00.000Z"
CTX = Ctx(instance="i", host_id="h")
CHECKPOINTS = "SELECT root, origin, committed_offset, size, head_hash FROM ingest_checkpoints ORDER BY 1, 2"


def test_a_refused_batch_stops_the_ingest_and_nothing_past_it_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = refuse_second_batch(monkeypatch)
    conn = new_db(tmp_path / "x.db")
    with pytest.raises(StorageError, match="disk full"):
        ingest_roots(conn, [FIXTURES], now=NOW, ctx=CTX, batch_rows=5)
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
