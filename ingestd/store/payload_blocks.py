"""Transcript lines compressed together in blocks, each line's row a reference (SPEC §3, §11; migration 0016).

A line compressed alone shares nothing with its neighbours; consecutive lines of one transcript
share keys, ids, paths and text. Compressed together, in blocks of about ``BLOCK_BYTES`` of
lines, they take half the room of lines compressed one by one with the trained dictionary
(measured on the real corpus: 8.8x against 4.3x; the generated c100 corpus 4.9x against 4.0x;
CHANGELOG.md, "Measured"), for less CPU.

Within one batch (``plan``), the new ``jsonl`` rows of one origin whose lines add up to at least
``BLOCK_MIN_BYTES`` are cut into blocks of at least ``BLOCK_BYTES`` of lines (a short tail joins
the block before it). Each block is one zstd frame written with the database's current codec
(the trained dictionary when there is one) and stored once in ``payload_blocks`` (append-only);
each of its rows stores a reference (``ref``): block id, offset and length in the block's bytes,
and the CRC-32 of the whole block's bytes. Hooks, ``ingestd`` rows and small batches (a tail of
a few lines) keep the per-row codecs of ``ingestd.store.payload``.

Reading (``read``) decompresses a block once and keeps the last ``CACHE_BLOCKS`` per connection
(at most ``CACHE_BYTES`` beyond the newest),
so a sequential reader (replay, rebuild, verify, ship, titles) decodes each block once, not once
per row. The CRC in the reference both proves the bytes and keys the cache: a block cached by a
transaction that rolled back, whose id a later block took, is never served for it.

The codec itself is not here: ``ingestd.store.payload`` passes its compressor and decompressor in.
"""

from __future__ import annotations

import collections
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import cast

from ingestd.core.records import NewLogRow
from ingestd.errors import StorageError
from ingestd.store.connection import Db

# ``events_raw.codec`` of a row whose payload is a reference into ``payload_blocks``.
BLOCK = -1
# Lines per block, in bytes as read: 256 KiB gives 8.8x on the real corpus, 64 KiB 7.7x, 1 MiB
# 9.6x; a reader of one row decompresses the whole block (0.3 ms for 256 KiB).
BLOCK_BYTES = 256 * 1024
# An origin's lines in one batch below this stay per-row (a tail of a few lines, read back
# soon and one by one by the daemon); a block's short tail below it joins the block before.
BLOCK_MIN_BYTES = 32 * 1024
# The read cache per connection: the last blocks used, at most this many and (beyond the newest)
# this many bytes (a block of one huge line is as large as the line). Sixteen: a database the daemon
# filled has its sessions' blocks interleaved in log order (open blocks, ``payload_open``), and
# reading it in id order with 4 decompressed a block for most rows (real corpus, six sessions at a
# time: 47 us a row; 16: 9 us, per-row codecs 7 us; CHANGELOG.md, "Measured").
CACHE_BLOCKS = 16
CACHE_BYTES = 8 * 1024 * 1024
# A write keeps this many of its last blocks in the read cache (the next batch's summaries and
# folds read the newest lines), no more: a backfill's peak memory.
WRITE_KEPT = 4


class _Kept:
    """What a connection keeps of the blocks (``Db.state``).

    Attributes:
        recent: block id -> (CRC-32, bytes) of the blocks read last, the most recently used last
            (the read cache: ``CACHE_BLOCKS``, ``CACHE_BYTES``).
        written: the blocks the connection's last ``write`` stored, block id -> (CRC-32, offset ->
            the row's bytes): a row of the batch being written (a summary's leaf,
            ``ingestd.store.titles``) is read back from the rows themselves, with no block
            decompressed; ``forget_batch`` empties it once the batch's transaction is over.
        tables: the tables ``has_table`` found (a table is never dropped).
    """

    __slots__ = ("recent", "tables", "written")

    def __init__(self) -> None:
        self.recent: collections.OrderedDict[int, tuple[int, bytes]] = collections.OrderedDict()
        self.written: dict[int, tuple[int, dict[int, bytes]]] = {}
        self.tables: set[str] = set()


def plan(rows: Sequence[NewLogRow], among: Iterable[int] | None = None) -> list[list[int]]:
    """The blocks a batch's rows go into: for each block, the indices of its rows in ``rows``. Pure.

    Only ``jsonl`` rows (of those indexed by ``among``, default all); one origin (and generation)
    per block, rows in batch order. An origin whose rows add up to less than ``BLOCK_MIN_BYTES``
    gets none.
    """
    by_origin: dict[tuple[str, int], list[int]] = {}
    for i in range(len(rows)) if among is None else among:
        r = rows[i]
        if r.source == "jsonl":
            by_origin.setdefault((r.origin, r.origin_gen), []).append(i)
    out: list[list[int]] = []
    for indices in by_origin.values():
        if sum(len(rows[i].payload) for i in indices) < BLOCK_MIN_BYTES:
            continue
        mine: list[list[int]] = []
        cur: list[int] = []
        size = 0
        for i in indices:
            cur.append(i)
            size += len(rows[i].payload)
            if size >= BLOCK_BYTES:
                mine.append(cur)
                cur, size = [], 0
        if cur and mine and size < BLOCK_MIN_BYTES:
            mine[-1].extend(cur)
        elif cur:
            mine.append(cur)
        out.extend(mine)
    return out


def ref(block_id: int, offset: int, length: int, crc: int) -> bytes:
    """A row's stored payload: unsigned LEB128 varints of block id, offset and length (bytes, in the
    block's uncompressed bytes), then the block's CRC-32, 4 bytes big-endian. Pure."""
    out = bytearray()
    for v in (block_id, offset, length):
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    out += crc.to_bytes(4, "big")
    return bytes(out)


def parse_ref(blob: bytes | str) -> tuple[int, int, int, int]:
    """``(block id, offset, length, crc)`` from a stored reference (``ref``). Pure.

    Raises:
        StorageError: not a reference (the row is damaged).
    """
    if not isinstance(blob, bytes):
        raise StorageError("a block reference is stored as text: the log row is damaged", codec=BLOCK)
    vals: list[int] = []
    pos = 0
    for _ in range(3):
        v = shift = 0
        while True:
            if pos >= len(blob) or shift > 63:
                raise StorageError("a block reference is truncated: the log row is damaged", codec=BLOCK)
            b = blob[pos]
            pos += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        vals.append(v)
    if len(blob) != pos + 4:
        raise StorageError("a block reference has the wrong length: the log row is damaged", codec=BLOCK)
    return vals[0], vals[1], vals[2], int.from_bytes(blob[pos:], "big")


def has_table(conn: Db, name: str = "payload_blocks") -> bool:
    """Whether ``conn``'s database has table ``name`` (``payload_blocks``: migration 0016;
    ``payload_open``: 0019), remembered per connection once true (a table is never dropped).
    Read-only."""
    tables = conn.state(_Kept).tables
    if name in tables:
        return True
    got = bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchall())
    if got:
        tables.add(name)
    return got


def _remember(conn: Db, block_id: int, crc: int, data: bytes) -> None:
    cache = conn.state(_Kept).recent
    cache[block_id] = (crc, data)
    cache.move_to_end(block_id)
    while len(cache) > CACHE_BLOCKS or (len(cache) > 1 and sum(len(d) for _, d in cache.values()) > CACHE_BYTES):
        cache.popitem(last=False)


def _cached(conn: Db, block_id: int, crc: int) -> bytes | None:
    cache = conn.state(_Kept).recent
    got = cache.get(block_id)
    if got is None or got[0] != crc:
        return None
    cache.move_to_end(block_id)
    return got[1]


_KEYS = (
    "SELECT idempotency_key FROM events_raw WHERE origin = ? AND origin_gen = ?"
    " AND origin_offset >= ? AND origin_offset <= ?"
)


def new_rows(conn: Db, rows: Sequence[NewLogRow], among: list[int]) -> list[int]:
    """Indices of the batch's ``jsonl`` rows the insert will keep: of ``among`` (``first_lines``:
    the first of their key in the batch, so that no block holds bytes no row refers to), those
    not logged already (a file read again from its start). One range query on the log's origin
    index per file and generation of the batch, bounded by the batch's own offsets, so a long
    file's later batches do not read every line logged before them. Read-only."""
    groups: dict[tuple[str, int], list[int]] = {}
    for i in among:
        groups.setdefault((rows[i].origin, rows[i].origin_gen), []).append(i)
    out: list[int] = []
    for (origin, gen), indices in groups.items():
        offsets = [rows[i].origin_offset or 0 for i in indices]
        logged = {str(k) for (k,) in conn.execute(_KEYS, (origin, gen, min(offsets), max(offsets)))}
        out.extend(i for i in indices if rows[i].idempotency_key not in logged)
    return sorted(out)


def first_lines(rows: Sequence[NewLogRow]) -> list[int]:
    """Indices of the batch's ``jsonl`` rows that are the first of their key in it: the rows
    ``new_rows`` keeps when none is logged yet (a cold ingest). Pure."""
    seen: set[str] = set()
    out: list[int] = []
    for i, r in enumerate(rows):
        if r.source == "jsonl" and r.idempotency_key not in seen:
            seen.add(r.idempotency_key)
            out.append(i)
    return out


def write(
    conn: Db,
    rows: Sequence[NewLogRow],
    compress: Callable[[bytes], tuple[int, bytes]],
    codec: int,
) -> dict[int, bytes]:
    """Store the batch's blocks (``plan``) and return each blocked row's reference, by row index.

    Inside the caller's write transaction (the blocks are rolled back with the rows).

    Args:
        conn: the apsw write connection (migrated through 0016, else nothing is blocked).
        rows: the batch.
        compress: bytes -> ``(codec, zstd frame)``, the database's current codec
            (``payload.Codecs.compress``); codec: int, that codec's id.

    Returns:
        dict row index -> stored payload (``ref``); rows not in it are stored per row.
    """
    among = first_lines(rows)
    chunks = plan(rows, among)
    if not chunks or not has_table(conn):
        return {}
    new = new_rows(conn, rows, among)
    if new != among:  # some lines are logged already (a file read again): fewer rows, other blocks
        chunks = plan(rows, new)
    out: dict[int, bytes] = {}
    written: dict[int, tuple[int, dict[int, bytes]]] = {}
    for k, chunk in enumerate(chunks):
        kept = len(chunks) - k <= WRITE_KEPT  # the read cache keeps the last blocks only
        data = b"".join(rows[i].payload for i in chunk)
        codec, frame = compress(data)
        crc = zlib.crc32(data)
        conn.execute("INSERT INTO payload_blocks (codec, data) VALUES (?, ?)", (codec, frame))
        block_id = int(conn.last_insert_rowid())
        if kept:
            _remember(conn, block_id, crc, data)
        offset = 0
        lines: dict[int, bytes] = {}
        for i in chunk:
            line = rows[i].payload
            out[i] = ref(block_id, offset, len(line), crc)
            lines[offset] = line
            offset += len(line)
        written[block_id] = (crc, lines)
    conn.state(_Kept).written = written
    return out


def forget_batch(conn: Db) -> None:
    """Drop what ``write`` kept of the batch's rows (at the end of its transaction, either way)."""
    conn.state(_Kept).written = {}


def _in_batch(conn: Db, block_id: int, offset: int, length: int, crc: int) -> bytes | None:
    """A row of the batch being written, from its bytes as given to ``write`` (None: not one)."""
    block = conn.state(_Kept).written.get(block_id)
    if block is None or block[0] != crc:
        return None
    line = block[1].get(offset)
    return line if line is not None and len(line) == length else None


def read(conn: Db, blob: bytes | str, decompress: Callable[[int, bytes], bytes]) -> bytes:
    """A blocked row's bytes exactly as read, from its reference. Read-only (caches the block).

    Args:
        conn: the connection the row was read from.
        blob: the row's stored payload (``ref``).
        decompress: ``(codec, frame) -> bytes`` with ``conn``'s codecs (``payload.Codecs.decode``).

    Raises:
        StorageError: the reference, the block or its bytes are damaged or missing.
    """
    return read_slice(conn, *parse_ref(blob), decompress)


def read_slice(
    conn: Db, block_id: int, offset: int, length: int, crc: int, decompress: Callable[[int, bytes], bytes]
) -> bytes:
    """``read`` given the reference's four fields (``parse_ref``): ``length`` bytes at ``offset`` of
    block ``block_id``, whose bytes have CRC-32 ``crc``. Read-only (caches the block).

    Raises:
        StorageError: the block or its bytes are damaged or missing.
    """
    line = _in_batch(conn, block_id, offset, length, crc)
    if line is not None:
        return line
    data = _cached(conn, block_id, crc)
    if data is None:
        try:
            got = conn.execute("SELECT codec, data FROM payload_blocks WHERE id = ?", (block_id,)).fetchall()
        except UnicodeDecodeError as e:  # rewritten as TEXT by hand: SQLite hands back invalid UTF-8
            raise StorageError(f"payload block {block_id} is not stored as bytes: it is damaged", codec=BLOCK) from e
        if not got:
            raise StorageError(
                f"a log row refers to payload block {block_id}, which the database does not hold: it is damaged",
                codec=BLOCK,
            )
        frame = got[0][1]
        if not isinstance(frame, bytes):  # a block rewritten as TEXT by hand: no frame to read
            raise StorageError(f"payload block {block_id} is not stored as bytes: it is damaged", codec=BLOCK)
        data = decompress(cast(int, got[0][0]), frame)  # a damaged frame: StorageError, "does not decode"
        if zlib.crc32(data) != crc:
            raise StorageError(f"payload block {block_id} does not match its CRC: it is damaged", codec=BLOCK)
        _remember(conn, block_id, crc, data)
    if offset + length > len(data):
        raise StorageError(f"a log row's slice lies past the end of payload block {block_id}", codec=BLOCK)
    return data[offset : offset + length]


def size_of(blob: bytes | str) -> int:
    """Bytes of a blocked row as read, from its reference alone. Pure.

    Raises:
        StorageError: not a reference.
    """
    return parse_ref(blob)[2]
