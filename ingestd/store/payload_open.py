"""A tail's transcript lines gathered into blocks as they arrive (SPEC §3, §11; migration 0019).

``ingestd.store.payload_blocks`` compresses a large batch's lines of one transcript together
(8.8x on the real corpus), but the daemon's tailer writes a transcript a few lines at a time,
and a line compressed alone with the dictionary gives 4.3x: a database the daemon filled over
months held its payloads at half a backfill's ratio. Here such a line is appended to its
transcript's (origin and generation) open block instead:

- its ``events_raw`` row gets codec ``OPEN`` and a reference (``payload_blocks.ref``): the open
  block's id, the line's offset and length in the block's bytes, and the CRC-32 of the line
  itself (the block's bytes are not known yet);
- until the block is sealed the line waits in ``payload_open``, stored alone as before
  (``payload.Codecs.encode``);
- ``seal`` (the block reached ``SEAL_BYTES`` of lines, or nothing was appended to it for
  ``SEAL_IDLE``) compresses the lines as one ``payload_blocks`` frame, records where in
  ``payload_sealed`` (append-only) and deletes the waiting copies, in the caller's transaction.

A log row never changes, and at every commit exactly one of ``payload_open`` and ``payload_sealed``
can give its bytes: ``read`` asks both in one statement (one snapshot), and remembers per
connection where the blocks it found sealed went.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import cast

import apsw

from ingestd.core import timefmt
from ingestd.core.records import NewLogRow
from ingestd.errors import StorageError
from ingestd.logs import get_logger
from ingestd.store import payload_blocks as blocks
from ingestd.store.connection import Db

log = get_logger("ingestd.store.payload_open")

# ``events_raw.codec`` of a row whose payload is a reference into an open (or since sealed) block.
OPEN = -2
# An open block is sealed once its lines add up to this many bytes (a backfill's block size).
SEAL_BYTES = blocks.BLOCK_BYTES
# ... or once nothing was appended to it for this long (a session that ended), judged by the
# receipt times of the rows written (``seal_idle``), at most SEAL_IDLE_MAX per write transaction.
SEAL_IDLE = timedelta(hours=1)
SEAL_IDLE_MAX = 4

Encode = Callable[[bytes], tuple[int, bytes]]  # bytes -> (codec, stored value): ``Codecs.encode``
Compress = Callable[[bytes], tuple[int, bytes]]  # bytes -> (codec, zstd frame): ``Codecs.compress``
Decode = Callable[[int, bytes], bytes]  # (codec, stored value) -> bytes: ``payload.decode``'s codecs

# Above every id any of the three tables names: a waiting line whose open block row is gone (a
# damaged or hand-edited database) never has its id taken again.
_NEXT_ID = (
    "SELECT max(coalesce((SELECT max(id) FROM payload_open_blocks), 0),"
    " coalesce((SELECT max(open_id) FROM payload_sealed), 0),"
    " coalesce((SELECT max(open_id) FROM payload_open), 0)) + 1"
)
# One statement, so one snapshot: the line waiting, or where its block was sealed (never both at a
# commit, never neither for an undamaged row).
_WHERE = (
    "SELECT o.codec, o.data, s.block_id, s.crc FROM (SELECT ?1 AS id) k"
    " LEFT JOIN payload_open o ON o.open_id = k.id AND o.offset = ?2"
    " LEFT JOIN payload_sealed s ON s.open_id = k.id"
)


class _Sealed(dict[int, tuple[int, int]]):
    """What a connection keeps of the open blocks it read sealed (``Db.state``): open block id ->
    (``payload_blocks`` id, CRC). ``payload_sealed`` is append-only; an entry a rolled-back seal
    left is caught by the block's CRC and dropped."""


def has_tables(conn: Db) -> bool:
    """Whether ``conn``'s database has the open-block tables (migration 0019). Read-only."""
    return blocks.has_table(conn, "payload_open")


def _open_block(conn: Db, origin: str, gen: int, received_at: str) -> tuple[int, int]:
    """``(id, size)`` of the origin generation's open block, opened when it has none."""
    got = conn.execute(
        "SELECT id, size FROM payload_open_blocks WHERE origin = ? AND origin_gen = ?", (origin, gen)
    ).fetchall()
    if got:
        return cast(int, got[0][0]), cast(int, got[0][1])
    block_id = cast(int, conn.execute(_NEXT_ID).fetchall()[0][0])
    conn.execute(
        "INSERT INTO payload_open_blocks (id, origin, origin_gen, size, updated_at) VALUES (?, ?, ?, 0, ?)",
        (block_id, origin, gen, received_at),
    )
    return block_id, 0


def append(
    conn: Db, rows: Sequence[NewLogRow], indices: Sequence[int], encode: Encode, compress: Compress, decode: Decode
) -> dict[int, bytes]:
    """Append ``rows[i]`` (for ``i`` in ``indices``, in order) to their origin's open block.

    Inside the caller's write transaction (rolled back with the rows). Blocks that reach
    ``SEAL_BYTES`` are sealed before returning.

    Args:
        conn: the apsw write connection, migrated through 0019.
        rows: the batch; ``indices``: its new ``jsonl`` rows (each key once, none logged yet:
            ``payload_blocks.new_rows``), so that no block holds a line no row refers to.
        encode: how a waiting line is stored; compress, decode: for ``seal``.

    Returns:
        dict row index -> the row's stored payload (a reference; its codec is ``OPEN``).
    """
    by_origin: dict[tuple[str, int], list[int]] = {}
    for i in indices:
        by_origin.setdefault((rows[i].origin, rows[i].origin_gen), []).append(i)
    out: dict[int, bytes] = {}
    for (origin, gen), mine in by_origin.items():
        newest = max(rows[i].received_at for i in mine)
        block_id, size = _open_block(conn, origin, gen, newest)
        waiting = []
        for i in mine:
            line = rows[i].payload
            codec, stored = encode(line)
            waiting.append((block_id, size, codec, stored))
            out[i] = blocks.ref(block_id, size, len(line), zlib.crc32(line))
            size += len(line)
        conn.executemany("INSERT INTO payload_open (open_id, offset, codec, data) VALUES (?, ?, ?, ?)", waiting)
        conn.execute(
            "UPDATE payload_open_blocks SET size = ?, updated_at = max(updated_at, ?) WHERE id = ?",
            (size, newest, block_id),
        )
        if size >= SEAL_BYTES:
            seal(conn, block_id, compress, decode)
    return out


def seal(conn: Db, block_id: int, compress: Compress, decode: Decode) -> bool:
    """Seal one open block: its lines as one ``payload_blocks`` frame, ``payload_sealed`` naming
    it, the waiting copies and the open block deleted. Inside the caller's write transaction, in a
    savepoint of its own; never fails the caller's batch.

    Returns:
        True when sealed. False when the block cannot be: its waiting lines do not run on from
        offset 0, or one does not decode (a damaged or hand-edited database). The block is then
        retired, not sealed: its ``payload_open_blocks`` row goes, so new lines open a fresh block
        and no later write tries again, and its waiting lines stay where ``read`` finds them (the
        damaged one named by ``verify``). Logged as ``open_block_unsealable``.
    """
    conn.execute("SAVEPOINT payload_seal")
    try:
        sealed = _seal(conn, block_id, compress, decode)
    except (StorageError, apsw.Error) as e:
        conn.execute("ROLLBACK TO payload_seal")
        sealed = False
        why = str(e)
    else:
        why = "its waiting lines do not run on from offset 0"
    if not sealed:
        log.warning("open_block_unsealable", open_id=block_id, reason=why)
    conn.execute("DELETE FROM payload_open_blocks WHERE id = ?", (block_id,))  # sealed or retired
    conn.execute("RELEASE payload_seal")
    return sealed


def _seal(conn: Db, block_id: int, compress: Compress, decode: Decode) -> bool:
    parts: list[bytes] = []
    size = 0
    for offset, codec, stored in conn.execute(
        "SELECT offset, codec, data FROM payload_open WHERE open_id = ? ORDER BY offset", (block_id,)
    ):
        if offset != size:
            return False
        line = decode(int(codec), stored)
        parts.append(line)
        size += len(line)
    data = b"".join(parts)
    codec, frame = compress(data)
    conn.execute("INSERT INTO payload_blocks (codec, data) VALUES (?, ?)", (codec, frame))
    sealed_as = int(conn.last_insert_rowid())
    conn.execute(
        "INSERT INTO payload_sealed (open_id, block_id, crc) VALUES (?, ?, ?)", (block_id, sealed_as, zlib.crc32(data))
    )
    conn.execute("DELETE FROM payload_open WHERE open_id = ?", (block_id,))
    return True


def idle_before(received_at: str) -> str | None:
    """The ``updated_at`` below which an open block is idle, for rows received at ``received_at``:
    ``SEAL_IDLE`` earlier, in the canonical spelling (``timefmt``); None when ``received_at`` is
    not an instant. Pure."""
    at = timefmt.parse(received_at)
    return None if at is None else timefmt.format_utc(at - SEAL_IDLE)


def seal_idle(conn: Db, received_at: str, compress: Compress, decode: Decode) -> int:
    """Seal up to ``SEAL_IDLE_MAX`` open blocks nothing was appended to for ``SEAL_IDLE`` before
    ``received_at`` (the newest receipt time of the rows being written). Inside the caller's
    write transaction; returns how many were sealed."""
    before = idle_before(received_at)
    if before is None:
        return 0  # not a time: no block is judged idle by it
    ids = [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM payload_open_blocks WHERE updated_at < ? ORDER BY updated_at, id LIMIT ?",
            (before, SEAL_IDLE_MAX),
        )
    ]
    return sum(seal(conn, block_id, compress, decode) for block_id in ids)


def read(conn: Db, blob: bytes | str, decode: Decode) -> bytes:
    """An ``OPEN`` row's bytes exactly as read, from its reference. Read-only.

    One statement (``_WHERE``) finds the line waiting or its block sealed; a block read sealed is
    remembered per connection (``_Sealed``), so a sequential reader (replay, verify, ship, the hook
    writer catching up on a session) pays no statement for the other rows of that block, and the
    block itself is decompressed once (``payload_blocks.read``'s cache).

    Args:
        conn: the connection the row was read from.
        blob: the row's stored payload (``payload_blocks.ref`` of the open block).
        decode: ``(codec, stored value) -> bytes`` for a waiting line or a sealed frame: the
            per-row codecs only (``payload.Codecs.decode``).

    Raises:
        StorageError: the reference is damaged, neither table holds the line, or its bytes do
            not match the reference's length and CRC.
    """
    block_id, offset, length, crc = blocks.parse_ref(blob)
    memo = conn.state(_Sealed)
    where = memo.get(block_id)
    line: bytes | None = None
    if where is not None:
        try:
            line = blocks.read_slice(conn, where[0], offset, length, where[1], decode)
        except StorageError:
            memo.pop(block_id, None)  # a seal that rolled back: look again
    if line is None:
        got = conn.execute(_WHERE, (block_id, offset)).fetchall()[0]
        if got[1] is not None:
            line = decode(cast(int, got[0]), cast(bytes, got[1]))
        elif got[2] is not None:
            where = (cast(int, got[2]), cast(int, got[3]))
            line = blocks.read_slice(conn, where[0], offset, length, where[1], decode)
            memo[block_id] = where
        else:
            raise StorageError(
                f"a log row refers to open payload block {block_id}, which neither payload_open nor "
                "payload_sealed holds: the database is damaged",
                codec=OPEN,
            )
    if len(line) != length or zlib.crc32(line) != crc:
        raise StorageError(f"a log row's line in open payload block {block_id} does not match its CRC", codec=OPEN)
    return line
