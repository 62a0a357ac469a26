"""An ingest that cannot write stops: what was committed before stays, nothing past it. A file that
cannot be read is counted and skipped, and the others are read."""

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


def test_a_file_whose_read_loses_its_connection_is_unreadable_and_the_others_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a network file system dropping its connection mid-read is one unreadable file, like EIO
    real = readfile.read_file
    seen: list[str] = []

    def flaky(b: Any, root: str, f: Any, *args: Any) -> None:
        seen.append(f.origin)
        if len(seen) == 1:
            raise ConnectionResetError(104, "Connection reset by peer")
        real(b, root, f, *args)

    monkeypatch.setattr(readfile, "read_file", flaky)
    conn = new_db(tmp_path / "x.db")
    s = ingest_roots(conn, [FIXTURES], now=NOW, ctx=CTX)
    assert s.files_unreadable == 1 and len(seen) > 1
    origins = {str(o) for (o,) in conn.execute("SELECT DISTINCT origin FROM events_raw WHERE source = 'jsonl'")}
    assert seen[0] not in origins and set(seen[1:]) <= origins
