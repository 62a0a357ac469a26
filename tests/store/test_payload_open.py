"""A tail's few lines at a time gathered into their transcript's open block, sealed into one frame,
every row read back byte for byte at every moment (SPEC §3, §11, migration 0019,
``ingestd.store.payload_open``)."""

from __future__ import annotations

import zlib
from pathlib import Path

import apsw
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestd.core.records import NewLogRow
from ingestd.errors import StorageError
from ingestd.projection.verify import check_append_only, check_payloads
from ingestd.store import payload
from ingestd.store import payload_blocks as blocks
from ingestd.store import payload_open as opened
from ingestd.store.connection import connect, write_txn
from ingestd.store.migrate import migrate
from ingestd.store.writer import apply_batch
from tests.store.conftest import stored
from tests.store.test_payload_blocks import _line

T = "2026-01-01T00:00:00.000Z"


def _tail(start: int, n: int, origin: str = "p/a.jsonl", at: str = T, source: str = "jsonl") -> list[NewLogRow]:
    """Lines ``start .. start + n`` of one transcript, at their offsets in it (every line the same
    shape, so an offset is a function of the line number)."""
    out = []
    for i in range(start, start + n):
        data = _line(i, origin)
        offset = sum(len(_line(k, origin)) + 1 for k in range(i))
        out.append(
            NewLogRow(f"j:{origin}:0:{offset:012x}", source, "assistant", data, at, f"s-{origin}", origin, 0, offset)
        )
    return out


def _want(*batches: list[NewLogRow]) -> dict[str, bytes]:
    return {r.idempotency_key: r.payload for b in batches for r in b}


def _reads_back(conn: apsw.Connection, want: dict[str, bytes]) -> None:
    got = {k: payload.decode(conn, c, p) for k, c, p in stored(conn)}
    assert got == want


@pytest.fixture
def conn(tmp_path: Path) -> apsw.Connection:
    c = connect(tmp_path / "i.db")
    migrate(c)
    apply_batch(c, _tail(0, 3, origin="p/first.jsonl"))  # a codec (plain zstd) to write with
    return c


def test_a_tails_few_lines_go_to_the_transcripts_open_block_and_read_back(conn: apsw.Connection) -> None:
    first = _tail(0, 3, origin="p/first.jsonl")
    batches = [_tail(0, 2), _tail(2, 3), _tail(5, 1)]
    for b in batches:
        apply_batch(conn, b)
    rows = [(c, blocks.parse_ref(p)) for k, c, p in stored(conn) if k.startswith("j:p/a.jsonl")]
    assert {c for c, _ in rows} == {opened.OPEN}
    assert len({ref[0] for _, ref in rows}) == 1  # one open block for the transcript
    assert [ref[1] for _, ref in rows] == [sum(len(_line(k)) for k in range(i)) for i in range(6)]  # offsets
    assert conn.execute("SELECT count(*) FROM payload_open").fetchall() == [(6 + 3,)]
    assert conn.execute("SELECT count(*) FROM payload_sealed").fetchall() == [(0,)]
    _reads_back(conn, _want(first, *batches))
    assert check_payloads(conn).ok
    # the same lines read again (a restart): nothing appended twice
    apply_batch(conn, _tail(0, 6))
    assert conn.execute("SELECT count(*) FROM payload_open").fetchall() == [(6 + 3,)]


def test_a_block_that_reaches_seal_bytes_is_sealed_into_one_frame(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(opened, "SEAL_BYTES", 2000)
    batches = [_tail(i, 2) for i in range(0, 100, 2)]
    for b in batches:
        apply_batch(conn, b)
    sealed = conn.execute("SELECT open_id, block_id, crc FROM payload_sealed ORDER BY open_id").fetchall()
    total = sum(len(r.payload) for b in batches for r in b)
    assert len(sealed) >= total // 2500, (len(sealed), total)
    for open_id, block_id, crc in sealed:
        assert conn.execute("SELECT count(*) FROM payload_open WHERE open_id = ?", (open_id,)).fetchall() == [(0,)]
        codec, frame = conn.execute("SELECT codec, data FROM payload_blocks WHERE id = ?", (block_id,)).fetchall()[0]
        data = payload.codecs_of(conn).decode(codec, frame)
        assert zlib.crc32(data) == crc and len(data) >= 2000
        # the frame holds exactly the lines its rows refer to, in order
        refs = [blocks.parse_ref(p) for _, c, p in stored(conn) if c == opened.OPEN]
        mine = sorted((off, n) for b, off, n, _ in refs if b == open_id)
        assert mine[0][0] == 0 and sum(n for _, n in mine) == len(data)
    _reads_back(conn, _want(_tail(0, 3, origin="p/first.jsonl"), *batches))
    assert check_payloads(conn).ok and check_append_only(conn).ok


def test_an_idle_open_block_is_sealed_by_a_later_write(conn: apsw.Connection) -> None:
    apply_batch(conn, _tail(0, 3))
    apply_batch(conn, _tail(0, 2, origin="p/b.jsonl", at="2026-01-01T00:30:00.000Z"))
    assert conn.execute("SELECT count(*) FROM payload_sealed").fetchall() == [(0,)]
    # an hour and a bit after the first transcript's last line: it (and p/first.jsonl) is sealed, not p/b.jsonl
    apply_batch(conn, _tail(0, 1, origin="p/c.jsonl", at="2026-01-01T01:10:00.000Z"))
    left = [str(o) for (o,) in conn.execute("SELECT origin FROM payload_open_blocks ORDER BY origin")]
    assert left == ["p/b.jsonl", "p/c.jsonl"]
    assert conn.execute("SELECT count(*) FROM payload_sealed").fetchall() == [(2,)]
    want = _want(_tail(0, 3, origin="p/first.jsonl"), _tail(0, 3), _tail(0, 2, origin="p/b.jsonl"))
    want |= _want(_tail(0, 1, origin="p/c.jsonl"))
    _reads_back(conn, want)
    # new lines of a sealed transcript open a new block
    apply_batch(conn, _tail(3, 2, at="2026-01-01T01:11:00.000Z"))
    assert "p/a.jsonl" in {str(o) for (o,) in conn.execute("SELECT origin FROM payload_open_blocks")}
    _reads_back(conn, want | _want(_tail(3, 2)))


def test_at_most_seal_idle_max_blocks_are_sealed_per_write(conn: apsw.Connection) -> None:
    for k in range(opened.SEAL_IDLE_MAX + 3):
        apply_batch(conn, _tail(0, 1, origin=f"p/{k}.jsonl"))
    later = "2026-01-01T05:00:00.000Z"
    apply_batch(conn, _tail(0, 1, origin="p/late.jsonl", at=later))
    assert conn.execute("SELECT count(*) FROM payload_sealed").fetchall() == [(opened.SEAL_IDLE_MAX,)]
    apply_batch(conn, _tail(1, 1, origin="p/late.jsonl", at=later))
    assert conn.execute("SELECT count(*) FROM payload_open_blocks").fetchall() == [(1,)]


def _seal(c: apsw.Connection, open_id: int) -> bool:
    codecs = payload.codecs_of(c)
    return bool(opened.seal(c, open_id, codecs.compress, lambda k, b: payload.decode(c, k, b)))


def _open_id(c: apsw.Connection, origin: str = "p/a.jsonl") -> int:
    return int(c.execute("SELECT id FROM payload_open_blocks WHERE origin = ?", (origin,)).fetchall()[0][0])


def test_a_row_read_before_and_after_another_connection_seals_its_block(conn: apsw.Connection) -> None:
    rows = _tail(0, 4)
    apply_batch(conn, rows)
    got = {k: (c, p) for k, c, p in stored(conn)}
    reader = connect(conn.filename, readonly=True)
    assert [payload.decode(reader, *got[r.idempotency_key]) for r in rows] == [r.payload for r in rows]
    assert write_txn(conn, lambda c: _seal(c, _open_id(c)))
    statements: list[str] = []

    def trace(cursor: apsw.Cursor, sql: str, bindings: object) -> bool:
        statements.append(sql)
        return True

    reader.exec_trace = trace
    assert [payload.decode(reader, *got[r.idempotency_key]) for r in rows] == [r.payload for r in rows]
    # the first row finds where the block went (one statement, the block read once); the others ask nothing
    assert sum("payload_sealed" in q for q in statements) == 1, statements
    assert sum("FROM payload_blocks" in q for q in statements) == 1, statements


def test_where_a_rolled_back_seal_went_is_not_remembered(conn: apsw.Connection) -> None:
    rows = _tail(0, 3)
    apply_batch(conn, rows)
    key_codec_blob = {k: (c, p) for k, c, p in stored(conn)}

    def seal_read_fail(c: apsw.Connection) -> None:
        assert _seal(c, _open_id(c))
        assert payload.decode(c, *key_codec_blob[rows[0].idempotency_key]) == rows[0].payload  # remembered
        raise RuntimeError("the transaction fails after the seal was read")

    with pytest.raises(RuntimeError):
        write_txn(conn, seal_read_fail)
    apply_batch(conn, _tail(0, 200, origin="p/big.jsonl"))  # a block takes the rolled-back block's id
    assert [payload.decode(conn, *key_codec_blob[r.idempotency_key]) for r in rows] == [r.payload for r in rows]


def test_a_block_with_a_damaged_line_is_retired_and_writes_go_on(conn: apsw.Connection) -> None:
    # Regression: a seal that raised failed every later transcript write (lines lost, quarantined)
    apply_batch(conn, _tail(0, 3))
    apply_batch(conn, _tail(0, 2, origin="p/b.jsonl"))
    conn.execute("UPDATE payload_open SET data = x'28b52ffd00' WHERE open_id = ? AND offset > 0", (_open_id(conn),))
    later = _tail(0, 5, origin="p/c.jsonl", at="2026-01-01T02:00:00.000Z")
    apply_batch(conn, later)
    apply_batch(conn, _tail(5, 2, origin="p/c.jsonl", at="2026-01-01T02:00:01.000Z"))
    keys = {k for k, _, _ in stored(conn)}
    assert all(r.idempotency_key in keys for r in (*later, *_tail(5, 2, origin="p/c.jsonl")))
    left = {str(o) for (o,) in conn.execute("SELECT origin FROM payload_open_blocks")}
    assert "p/a.jsonl" not in left  # retired: no write tries it again
    assert conn.execute("SELECT count(*) FROM payload_sealed").fetchall()[0][0] >= 2  # the others sealed
    # the undamaged line of the retired block still reads; the damaged ones are named
    first = {k: (c, p) for k, c, p in stored(conn)}[_tail(0, 1)[0].idempotency_key]
    assert payload.decode(conn, *first) == _tail(0, 1)[0].payload
    assert not check_payloads(conn).ok


def test_a_block_with_a_gap_is_retired_and_its_other_lines_still_read(conn: apsw.Connection) -> None:
    rows = _tail(0, 3)
    apply_batch(conn, rows)
    open_id = _open_id(conn)
    conn.execute("DELETE FROM payload_open WHERE open_id = ? AND offset = 0", (open_id,))
    assert not write_txn(conn, lambda c: _seal(c, open_id))
    assert conn.execute("SELECT count(*) FROM payload_open WHERE open_id = ?", (open_id,)).fetchall() == [(2,)]
    assert conn.execute("SELECT count(*) FROM payload_open_blocks WHERE id = ?", (open_id,)).fetchall() == [(0,)]
    got = {k: (c, p) for k, c, p in stored(conn)}
    assert [payload.decode(conn, *got[r.idempotency_key]) for r in rows[1:]] == [r.payload for r in rows[1:]]
    with pytest.raises(StorageError, match="neither payload_open nor payload_sealed"):
        payload.decode(conn, *got[rows[0].idempotency_key])


def test_a_waiting_line_without_its_open_block_keeps_its_id(conn: apsw.Connection) -> None:
    # Regression: the next open block took the id again and every new transcript hit UNIQUE(open_id, offset)
    apply_batch(conn, _tail(0, 3))
    conn.execute("DELETE FROM payload_open_blocks WHERE origin = 'p/a.jsonl'")
    b = _tail(0, 3, origin="p/b.jsonl")
    apply_batch(conn, b)
    got = {k: (c, p) for k, c, p in stored(conn)}
    assert [payload.decode(conn, *got[r.idempotency_key]) for r in b] == [r.payload for r in b]


def test_a_reference_codec_inside_a_waiting_line_is_refused_not_followed(conn: apsw.Connection) -> None:
    # Regression: a waiting line stored as codec -2 pointing at its own row recursed until RecursionError
    rows = _tail(0, 2)
    apply_batch(conn, rows)
    codec, blob = {k: (c, p) for k, c, p in stored(conn)}[rows[0].idempotency_key]
    conn.execute(
        "UPDATE payload_open SET codec = -2, data = ? WHERE offset = 0 AND open_id = ?", (blob, _open_id(conn))
    )
    with pytest.raises(StorageError, match="reference codec"):
        payload.decode(conn, codec, blob)
    assert not check_payloads(conn).ok


def test_a_rolled_back_batch_leaves_no_waiting_line_and_no_open_block(conn: apsw.Connection) -> None:
    def boom(c: apsw.Connection) -> None:
        payload.encode_rows(c, _tail(0, 3))
        raise RuntimeError("the batch fails after its rows were encoded")

    with pytest.raises(RuntimeError):
        write_txn(conn, boom)
    assert conn.execute("SELECT count(*) FROM payload_open_blocks WHERE origin = 'p/a.jsonl'").fetchall() == [(0,)]
    apply_batch(conn, _tail(0, 3))
    _reads_back(conn, _want(_tail(0, 3, origin="p/first.jsonl"), _tail(0, 3)))


def test_hooks_and_large_batches_do_not_use_open_blocks(conn: apsw.Connection) -> None:
    apply_batch(conn, _tail(0, 3, origin="hook", source="hook"))
    big = _tail(0, 400, origin="p/big.jsonl")  # over BLOCK_MIN_BYTES: blocks
    assert sum(len(r.payload) for r in big) >= blocks.BLOCK_MIN_BYTES
    apply_batch(conn, big)
    codecs = {c for k, c, _ in stored(conn) if not k.startswith("j:p/first.jsonl")}
    assert opened.OPEN not in codecs and blocks.BLOCK in codecs


def test_a_waiting_line_that_is_missing_or_damaged_is_named(conn: apsw.Connection) -> None:
    apply_batch(conn, _tail(0, 3))
    conn.execute("DELETE FROM payload_open WHERE offset = 0")
    conn.execute("UPDATE payload_open SET data = x'00' || data WHERE codec = 0")
    got = check_payloads(conn)
    assert not got.ok and any("neither payload_open nor payload_sealed" in d for d in got.details), got.details
    with pytest.raises(StorageError, match="open payload block"):
        [payload.decode(conn, c, p) for _, c, p in stored(conn) if c == opened.OPEN]


def test_the_sealed_table_is_append_only_and_verify_probes_it(conn: apsw.Connection) -> None:
    assert check_append_only(conn).ok
    conn.execute("DROP TRIGGER payload_sealed_no_delete")
    got = check_append_only(conn)
    assert not got.ok and any("payload_sealed_no_delete is missing" in d for d in got.details)


def test_the_idle_threshold_keeps_the_canonical_spelling() -> None:
    assert opened.idle_before("2026-01-01T00:30:00.123Z") == "2025-12-31T23:30:00.123Z"


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=12), st.integers(300, 3000))
def test_any_sequence_of_tails_reads_back_whatever_is_sealed(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], seal: int
) -> None:
    c = connect(tmp_path_factory.mktemp("o") / "o.db")
    migrate(c)
    apply_batch(c, _tail(0, 3, origin="p/first.jsonl"))
    old = opened.SEAL_BYTES
    opened.SEAL_BYTES = seal
    try:
        start, batches = 0, []
        for n in sizes:
            batches.append(_tail(start, n))
            apply_batch(c, batches[-1])
            start += n
        _reads_back(c, _want(_tail(0, 3, origin="p/first.jsonl"), *batches))
        frames = sum(zstandard.frame_content_size(d) for (d,) in c.execute("SELECT data FROM payload_blocks"))
        waiting = c.execute("SELECT coalesce(sum(size), 0) FROM payload_open_blocks WHERE origin = 'p/a.jsonl'")
        assert frames + waiting.fetchall()[0][0] == sum(len(r.payload) for b in batches for r in b)
    finally:
        opened.SEAL_BYTES = old
        c.close()
