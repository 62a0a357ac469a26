"""Transcript lines compressed together in blocks, each row a reference, read back byte for byte
(SPEC §3, §11, migration 0016, ``ingestd.store.payload_blocks``)."""

from __future__ import annotations

import apsw
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.records import NewLogRow
from ingestd.errors import StorageError
from ingestd.projection.verify import check_append_only, check_payloads
from ingestd.store import payload, writer
from ingestd.store import payload_blocks as blocks
from ingestd.store.connection import connect, write_txn
from ingestd.store.writer import apply_batch
from tests.store.conftest import stored

T = "2026-01-01T00:00:00.000Z"


def _line(i: int, origin: str = "p/a.jsonl") -> bytes:
    return orjson.dumps(
        {
            "type": "assistant",
            "sessionId": "s1",
            "uuid": f"u-{origin}-{i}",
            "timestamp": T,
            "cwd": "/home/dev/code/project",
            "message": {"role": "assistant", "content": f"answer {i}: module {i * 31 % 97} " + "x" * (i % 50)},
        }
    )


def _rows(n: int, start: int = 0, origin: str = "p/a.jsonl", source: str = "jsonl") -> list[NewLogRow]:
    out, offset = [], 0
    for i in range(start, start + n):
        data = _line(i, origin)
        out.append(NewLogRow(f"j:{origin}:0:{i:012x}", source, "assistant", data, T, "s1", origin, 0, offset))
        offset += len(data) + 1
    return out


def _total(rows: list[NewLogRow]) -> int:
    return sum(len(r.payload) for r in rows)


def test_plan_blocks_large_runs_of_one_origin_and_leaves_the_rest_per_row() -> None:
    big = _rows(3000)  # about 600 KB: blocks of at least BLOCK_BYTES, the tail in its own or the last
    small = _rows(20, origin="p/b.jsonl")  # under BLOCK_MIN_BYTES: per row
    hooks = _rows(400, origin="hook", source="hook")  # not transcript lines
    rows = [*big[:1000], *small, *hooks, *big[1000:]]
    got = blocks.plan(rows)
    assert [i for chunk in got for i in chunk] == [i for i, r in enumerate(rows) if r.origin == "p/a.jsonl"]
    sizes = [sum(len(rows[i].payload) for i in chunk) for chunk in got]
    assert all(s >= blocks.BLOCK_BYTES for s in sizes[:-1]), sizes
    assert sizes[-1] >= blocks.BLOCK_MIN_BYTES and max(sizes) < blocks.BLOCK_BYTES + blocks.BLOCK_MIN_BYTES + 400
    assert blocks.plan(small + hooks) == []


def test_plan_joins_a_short_tail_to_the_block_before() -> None:
    n = next(n for n in range(1, 5000) if _total(_rows(n)) >= blocks.BLOCK_BYTES)
    rows = _rows(n + 3)  # one full block and three lines
    assert blocks.plan(rows) == [list(range(n + 3))]


@pytest.mark.parametrize(
    ("block_id", "offset", "length", "crc"), [(1, 0, 0, 0), (127, 128, 16383, 2**32 - 1), (2**40, 2**31, 2**33, 7)]
)
def test_a_reference_round_trips(block_id: int, offset: int, length: int, crc: int) -> None:
    r = blocks.ref(block_id, offset, length, crc)
    assert blocks.parse_ref(r) == (block_id, offset, length, crc)
    assert blocks.size_of(r) == length
    for bad in (r[:-1], r + b"\x00", b"\xff" * 12, "text"):
        with pytest.raises(StorageError):
            blocks.parse_ref(bad)


def test_a_large_batch_is_stored_in_blocks_and_every_row_reads_back_exactly(conn: apsw.Connection) -> None:
    rows = [*_rows(3000), *_rows(20, origin="p/b.jsonl"), *_rows(5, origin="hook", source="hook")]
    assert apply_batch(conn, rows).inserted == len(rows)
    rows_stored = stored(conn)
    by_codec = {c for k, c, _ in rows_stored if k.startswith("j:p/a.jsonl")}
    assert by_codec == {blocks.BLOCK}
    assert blocks.BLOCK not in {c for k, c, _ in rows_stored if not k.startswith("j:p/a.jsonl")}
    n_blocks, block_bytes = conn.execute("SELECT count(*), sum(length(data)) FROM payload_blocks").fetchall()[0]
    assert n_blocks == len(blocks.plan(rows)) >= 2
    want = {r.idempotency_key: r.payload for r in rows}
    for key, codec, blob in rows_stored:
        assert payload.decode(conn, codec, blob) == want[key]
        assert payload.size_of(conn, codec, blob) == len(want[key])
    # far smaller than the lines compressed one by one (plain zstd here: no dictionary yet)
    alone = sum(len(payload.Codecs({1: None}).encode(r.payload)[1]) for r in rows[:3000])
    refs = sum(len(b) for k, _, b in rows_stored if k.startswith("j:p/a.jsonl"))
    assert block_bytes + refs < alone / 3, (block_bytes, refs, alone)
    assert check_payloads(conn).ok
    # another connection (no cache) reads the same bytes
    other = connect(conn.filename, readonly=True)
    for key, codec, blob in stored(other):
        assert payload.decode(other, codec, blob) == want[key]


def _count_decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, the codec of every frame ``payload.Codecs.decode`` decompresses, in order."""
    calls: list[int] = []
    real = payload.Codecs.decode

    def counting(self: payload.Codecs, codec: int, blob: bytes | str) -> bytes:
        calls.append(codec)
        return real(self, codec, blob)

    monkeypatch.setattr(payload.Codecs, "decode", counting)
    return calls


def test_a_sequential_reader_decompresses_each_block_once(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    apply_batch(conn, _rows(3000))
    reader = connect(conn.filename, readonly=True)
    calls = _count_decodes(monkeypatch)
    for _, codec, blob in stored(reader):
        payload.decode(reader, codec, blob)
    assert len(calls) == len(blocks.plan(_rows(3000))) >= 2  # once per block, not per row (3,000)


def test_a_block_cached_by_a_rolled_back_batch_is_never_served_for_its_successor(conn: apsw.Connection) -> None:
    def failing(c: apsw.Connection) -> None:
        apply_batch_rows = _rows(2000, origin="p/gone.jsonl")
        c.executemany(
            "INSERT INTO events_raw (idempotency_key, source, event_type, payload, received_at, session_id,"
            " origin, origin_gen, origin_offset, codec) VALUES (?,?,?,?,?,?,?,?,?,?)",
            payload.encode_rows(c, apply_batch_rows),
        )
        (codec, blob) = c.execute("SELECT codec, payload FROM events_raw ORDER BY id LIMIT 1").fetchall()[0]
        assert codec == blocks.BLOCK and payload.decode(c, codec, blob) == apply_batch_rows[0].payload
        raise RuntimeError("the batch fails after its block was written and read")

    with pytest.raises(RuntimeError):
        write_txn(conn, failing)
    assert conn.execute("SELECT count(*) FROM payload_blocks").fetchall() == [(0,)]
    # the same block id again, other lines, written by another connection
    other = connect(conn.filename)
    rows = _rows(2000, origin="p/kept.jsonl")
    apply_batch(other, rows)
    assert conn.execute("SELECT min(id) FROM payload_blocks").fetchall() == [(1,)]
    for (key, codec, blob), r in zip(stored(conn), rows, strict=True):
        assert (key, payload.decode(conn, codec, blob)) == (r.idempotency_key, r.payload)


def test_a_row_of_the_batch_being_written_reads_back_from_its_own_bytes(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a summary's leaf is looked up in its file's lines in the batch's own transaction (titles):
    # those of the batch come from the rows given to write, no block decompressed; once the
    # transaction is over, from the blocks again (and nothing of the batch is kept)
    rows = _rows(3000)
    calls = _count_decodes(monkeypatch)
    seen: list[bool] = []
    real_finish = writer._finish

    def finish(c: apsw.Connection, *args: object) -> None:
        c.state(blocks._Kept).recent.clear()  # not the read cache either
        for (key, codec, blob), r in zip(stored(c), rows, strict=True):
            seen.append(
                codec == blocks.BLOCK and payload.decode(c, codec, blob) == r.payload and key == r.idempotency_key
            )
        real_finish(c, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "_finish", finish)
    apply_batch(conn, rows)
    assert seen == [True] * len(rows) and calls == []
    assert conn.state(blocks._Kept).written == {}
    for (_, codec, blob), r in zip(stored(conn), rows, strict=True):
        assert payload.decode(conn, codec, blob) == r.payload
    assert calls  # read from the blocks now


def test_rows_already_logged_put_nothing_in_a_block(conn: apsw.Connection) -> None:
    rows = _rows(3000)
    apply_batch(conn, rows[:1500])
    before = conn.execute("SELECT count(*), sum(length(data)) FROM payload_blocks").fetchall()[0]
    # the whole file again (a re-read from the start): only the new half is stored
    assert apply_batch(conn, rows).inserted == 1500
    after = conn.execute("SELECT count(*), sum(length(data)) FROM payload_blocks").fetchall()[0]
    assert after[0] == before[0] + len(blocks.plan(rows[1500:])) and after[1] - before[1] < before[1] * 1.2
    assert apply_batch(conn, rows).inserted == 0
    assert conn.execute("SELECT count(*) FROM payload_blocks").fetchall()[0][0] == after[0]
    want = {r.idempotency_key: r.payload for r in rows}
    assert {k: payload.decode(conn, c, b) for k, c, b in stored(conn)} == want


def test_small_batches_and_hooks_keep_the_per_row_codecs(conn: apsw.Connection) -> None:
    apply_batch(conn, _rows(10))
    apply_batch(conn, _rows(600, origin="hook", source="hook"))
    assert blocks.BLOCK not in {c for _, c, _ in stored(conn)}
    assert conn.execute("SELECT count(*) FROM payload_blocks").fetchall() == [(0,)]


def test_the_blocks_table_is_append_only_and_verify_probes_it(conn: apsw.Connection) -> None:
    assert check_append_only(conn).ok  # probed on an empty table too
    apply_batch(conn, _rows(2000))
    for sql in ("UPDATE payload_blocks SET data = x'00'", "DELETE FROM payload_blocks"):
        with pytest.raises(apsw.ConstraintError, match="append-only"):
            conn.execute(sql)
    n = conn.execute("SELECT count(*) FROM payload_blocks").fetchall()
    assert check_append_only(conn).ok
    assert conn.execute("SELECT count(*) FROM payload_blocks").fetchall() == n  # its probe block rolled back
    conn.execute("DROP TRIGGER payload_blocks_no_update")
    got = check_append_only(conn)
    assert not got.ok and any("payload_blocks_no_update is missing" in d for d in got.details)


def test_verify_names_rows_whose_block_is_damaged_or_missing(conn: apsw.Connection) -> None:
    apply_batch(conn, _rows(2000))
    assert check_payloads(conn).details == ["every payload decodes (codec -1: 2000)"]
    conn.execute("DROP TRIGGER payload_blocks_no_update")
    conn.execute("DROP TRIGGER payload_blocks_no_delete")
    other = payload.Codecs({1: None}).compress(b"other bytes")[1]
    conn.execute("UPDATE payload_blocks SET data = ?", (other,))
    fresh = connect(conn.filename, readonly=True)  # no cached block
    got = check_payloads(fresh)
    assert not got.ok and "does not match its CRC" in got.details[0] and "1980 more" in got.details[-1]
    # a block rewritten as TEXT, or as bytes that are no zstd frame: a finding, never a traceback
    conn.execute("UPDATE payload_blocks SET data = CAST(data AS TEXT) WHERE id = 1")
    got = check_payloads(connect(conn.filename, readonly=True))
    assert not got.ok and "payload block 1 is not stored as bytes" in got.details[0]
    conn.execute("UPDATE payload_blocks SET data = x'00112233'")
    got = check_payloads(connect(conn.filename, readonly=True))
    assert not got.ok and "does not decode" in got.details[0]
    conn.execute("DELETE FROM payload_blocks")
    fresh = connect(conn.filename, readonly=True)
    got = check_payloads(fresh)
    assert not got.ok and "does not hold" in got.details[0]
    with pytest.raises(StorageError, match="payload block 1"):
        payload.decode(fresh, blocks.BLOCK, blocks.ref(1, 0, 5, 0))


def test_the_read_cache_is_bounded_in_blocks_and_bytes(conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    n = blocks.CACHE_BLOCKS
    for i in range(n + 2):
        blocks._remember(conn, i, 0, b"x" * 1000)
    assert list(conn.state(blocks._Kept).recent) == list(range(2, n + 2))
    monkeypatch.setattr(blocks, "CACHE_BYTES", 2500)
    blocks._remember(conn, n + 2, 0, b"x" * 1000)
    assert list(conn.state(blocks._Kept).recent) == [n + 1, n + 2]
    blocks._remember(conn, n + 3, 0, b"x" * 9000)  # larger than the bound alone: kept, the only one
    assert list(conn.state(blocks._Kept).recent) == [n + 3]


@given(
    st.lists(
        st.tuples(st.sampled_from(["p/a.jsonl", "p/b.jsonl", "hook"]), st.sampled_from([0, 1]), st.integers(0, 90_000)),
        max_size=60,
    )
)
def test_plan_puts_each_line_in_at_most_one_block_of_one_file_in_batch_order(
    spec: list[tuple[str, int, int]],
) -> None:
    rows = [
        NewLogRow(f"k{i}", "hook" if o == "hook" else "jsonl", "x", b"y" * n, T, None, o, g, i)
        for i, (o, g, n) in enumerate(spec)
    ]
    got = blocks.plan(rows)
    flat = [i for chunk in got for i in chunk]
    assert len(flat) == len(set(flat))
    for chunk in got:
        assert chunk == sorted(chunk)
        assert len({(rows[i].origin, rows[i].origin_gen) for i in chunk}) == 1
        assert all(rows[i].source == "jsonl" for i in chunk)
        size = sum(len(rows[i].payload) for i in chunk)
        biggest = max(len(rows[i].payload) for i in chunk)
        assert blocks.BLOCK_MIN_BYTES <= size < blocks.BLOCK_BYTES + blocks.BLOCK_MIN_BYTES + biggest
    for key in {(r.origin, r.origin_gen) for r in rows if r.source == "jsonl"}:
        mine = [i for i, r in enumerate(rows) if (r.origin, r.origin_gen) == key]
        total = sum(len(rows[i].payload) for i in mine)
        blocked = [i for i in flat if i in mine]
        assert blocked == (mine if total >= blocks.BLOCK_MIN_BYTES else [])
