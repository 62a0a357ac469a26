"""Log payloads stored compressed and read back byte for byte (SPEC §3, §11; migration 0013).

Every ``events_raw.payload`` goes in through ``encode_rows`` and comes out through ``decode``;
nothing else reads the stored value. ``events_raw.codec`` says how:

- ``0`` (``RAW``): the bytes as read. Every row written before migration 0013, and a row that
  compression would not make smaller.
- ``1`` (``PLAIN``): a zstd frame without dictionary (rows written before the database has
  enough lines to train one).
- ``n >= 2``: a zstd frame written with the dictionary stored in ``payload_codecs`` row ``n`` (its
  id derived from its bytes: ``_dictionary_id``).
- ``-1`` (``blocks.BLOCK``, migration 0016): a reference into a block of lines of one
  transcript compressed together (``ingestd.store.payload_blocks``), for the large batches of a
  backfill or a catch-up.
- ``-2`` (``opened.OPEN``, migration 0019): a reference into a transcript's open block, for the
  few lines a tail adds at a time (``ingestd.store.payload_open``): stored alone until the block
  is sealed, then read from its frame.

Other rows are compressed one by one (any row is read alone), so a short JSON line on its own
compresses poorly (measured on the corpus: 2.6x); a dictionary trained on the database's
first lines holds what lines share (keys, envelopes, common text) and lifts that to about
4x (CHANGELOG.md, "Measured"). It is trained once, when the log (with the batch being
written) first holds ``TRAIN_MIN_ROWS`` lines, from its first ``TRAIN_ROWS`` lines; it is
stored in the same transaction as the first rows written with it, and never changes
(``payload_codecs`` is append-only, as the log).

The compressor sits behind ``Codecs.encode(bytes) -> (codec, blob)``. ``encode_rows`` is the
writer's entry point: it brings the connection's codecs up to date, trains the dictionary when due,
and returns the rows ready to insert.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import zstandard

from ingestd import logs
from ingestd.core.records import NewLogRow
from ingestd.errors import StorageError
from ingestd.logs import get_logger
from ingestd.store import dictionary as zdict
from ingestd.store import payload_blocks as blocks
from ingestd.store import payload_open as opened
from ingestd.store.connection import Db
from ingestd.store.dictionary import (
    DICT_BYTES,
    LEVEL,
    TRAIN_D,
    TRAIN_K,
    dictionary_id,
    sample_rows,
)

log = get_logger("ingestd.store.payload")

RAW = 0
PLAIN = 1


class Codecs:
    """The payload codecs of one database: codec id -> zstd dictionary (None: no dictionary).

    ``encode`` writes with the newest codec (``current``); ``decode`` reads any codec the
    database has. The zstd contexts are made on first use.
    """

    def __init__(self, dictionaries: Mapping[int, bytes | None], level: int = LEVEL) -> None:
        self.dictionaries: dict[int, bytes | None] = dict(dictionaries)
        self.level = level
        # the newest (the last given): dictionaries are loaded oldest first, after PLAIN
        self.current = next(reversed(self.dictionaries), RAW)
        self._cctx: zstandard.ZstdCompressor | None = None
        self._dctx: dict[int, zstandard.ZstdDecompressor] = {}

    @classmethod
    def load(cls, conn: Db) -> Codecs:
        """The codecs a database holds (``payload_codecs``; none before migration 0013). Read-only."""
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'payload_codecs'").fetchall()
        if not has:
            return cls({})
        rows = conn.execute(
            "SELECT id, dictionary FROM payload_codecs ORDER BY dictionary IS NOT NULL, created_at, rowid"
        ).fetchall()
        return cls({cast(int, i): (cast(bytes, d) if d is not None else None) for i, d in rows})

    def _compressor(self) -> zstandard.ZstdCompressor:
        if self._cctx is None:
            dictionary = self.dictionaries.get(self.current)
            if dictionary is None:
                self._cctx = zstandard.ZstdCompressor(level=self.level, write_checksum=False)
            else:
                d = zstandard.ZstdCompressionDict(dictionary)
                d.precompute_compress(level=self.level)
                self._cctx = zstandard.ZstdCompressor(
                    level=self.level, dict_data=d, write_checksum=False, write_dict_id=False
                )
        return self._cctx

    def encode(self, data: bytes) -> tuple[int, bytes]:
        """``(codec, stored value)`` for a payload: compressed when that is smaller, else ``(RAW, data)``.

        Args:
            data: the payload, bytes exactly as read.

        Returns:
            ``(codec, blob)``; ``decode(codec, blob) == data``. Pure apart from the cached context.
        """
        if self.current == RAW:
            return RAW, data
        blob = self._compressor().compress(data)
        if len(blob) >= len(data):
            return RAW, data
        # A copy of exactly its size: the one-shot result is the compress bound's buffer shrunk
        # in place, and a batch of those held 2.5x their bytes (a cold ingest's peak memory
        # went from 268 to 329 MiB; with the copy, 25 MB of blobs cost 27 MB).
        return self.current, bytes(memoryview(blob))

    def compress(self, data: bytes) -> tuple[int, bytes]:
        """``(codec, zstd frame)`` of ``data`` with the newest codec, whatever its size (a block of
        lines, ``ingestd.store.payload_blocks``). Requires a codec (``current != RAW``)."""
        return self.current, bytes(memoryview(self._compressor().compress(data)))

    def decode(self, codec: int, blob: bytes | str) -> bytes:
        """The payload's bytes exactly as read, from its stored value.

        Args:
            codec: ``events_raw.codec``.
            blob: ``events_raw.payload`` as stored (a str only for a raw row a foreign writer
                bound as text: its UTF-8, lone surrogates kept).

        Raises:
            StorageError: the codec is unknown to this database or the value does not decode
                (the log is damaged: ``ingestd verify`` names such rows).
        """
        if codec == RAW:
            return blob if isinstance(blob, bytes) else str(blob).encode("utf-8", "surrogatepass")
        dctx = self._dctx.get(codec)
        if dctx is None:
            if codec not in self.dictionaries:
                raise StorageError(
                    f"a log payload is stored with codec {codec}, which this database's payload_codecs does not "
                    "hold: the database is damaged or was written by a newer ingestd",
                    codec=codec,
                )
            dictionary = self.dictionaries[codec]
            dctx = (
                zstandard.ZstdDecompressor()
                if dictionary is None
                else zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(dictionary))
            )
            self._dctx[codec] = dctx
        try:
            return dctx.decompress(blob if isinstance(blob, bytes) else bytes(str(blob), "utf-8"))
        except zstandard.ZstdError as e:
            raise StorageError(f"a log payload (codec {codec}) does not decode: {e}", codec=codec) from e

    def size_of(self, codec: int, blob: bytes | str) -> int:
        """Bytes of the payload as read, without decoding it (a zstd frame records its size)."""
        if codec == RAW:
            return len(blob) if isinstance(blob, bytes) else len(str(blob).encode("utf-8", "surrogatepass"))
        if not isinstance(blob, bytes):
            blob = str(blob).encode("utf-8")
        try:
            return int(zstandard.frame_content_size(blob))
        except zstandard.ZstdError as e:
            raise StorageError(f"a log payload (codec {codec}) has no readable zstd frame: {e}", codec=codec) from e


class _Kept:
    """What a connection keeps of its database's codecs (``Db.state``).

    Attributes:
        codecs: Codecs | None, as last loaded or trained. A codec id names one dictionary for good
            (``_dictionary_id``), so they are never wrong, only incomplete.
        failed_at: int, log rows (with the batch) when training last failed (0: never).
    """

    __slots__ = ("codecs", "failed_at")

    def __init__(self) -> None:
        self.codecs: Codecs | None = None
        self.failed_at = 0


def codecs_of(conn: Db, *, need: int | None = None) -> Codecs:
    """The codecs of ``conn``'s database, kept for the connection. Read-only.

    Args:
        need: a codec id about to be decoded: kept codecs that lack it are reloaded (another
            connection may have trained a dictionary since).
    """
    kept = conn.state(_Kept)
    got = kept.codecs
    if got is None or (need is not None and need != RAW and need not in got.dictionaries):
        got = kept.codecs = Codecs.load(conn)
    return got


def decode(conn: Db, codec: int, blob: bytes | str) -> bytes:
    """The one way to read a stored payload: the bytes exactly as read. Read-only.

    Args:
        conn: the connection the row was read from (its ``payload_codecs``).
        codec: ``events_raw.codec``; blob: ``events_raw.payload``.

    Raises:
        StorageError: see ``Codecs.decode``.
    """
    if codec == RAW and isinstance(blob, bytes):
        return blob
    if codec == blocks.BLOCK:
        return blocks.read(conn, blob, lambda c, frame: codecs_of(conn, need=c).decode(c, frame))
    if codec == opened.OPEN:
        return opened.read(conn, blob, lambda c, stored: _per_row(conn, c, stored))
    return codecs_of(conn, need=codec).decode(codec, blob)


def _per_row(conn: Db, codec: int, blob: bytes | str) -> bytes:
    """``decode`` for a value stored by a per-row codec (a waiting line, a block's frame): a
    reference codec there is damage, refused, never followed (it could point back at itself)."""
    if codec < RAW:
        raise StorageError(
            f"a waiting line or block is stored with reference codec {codec}: it is damaged", codec=codec
        )
    return decode(conn, codec, blob)


def size_of(conn: Db, codec: int, blob: bytes | str) -> int:
    """Bytes of a stored payload as read, without decoding it (``Codecs.size_of``). Read-only."""
    if codec in (blocks.BLOCK, opened.OPEN):
        return blocks.size_of(blob)
    return codecs_of(conn, need=codec).size_of(codec, blob)


def _writer_codecs(conn: Db) -> Codecs:
    """The connection's codecs, checked against the database inside the write transaction (a
    dictionary this connection trained in a batch that rolled back is not written with)."""
    got = codecs_of(conn)
    ids = {cast(int, r[0]) for r in conn.execute("SELECT id FROM payload_codecs").fetchall()}
    if ids != set(got.dictionaries):
        got = conn.state(_Kept).codecs = Codecs.load(conn)
    return got


def _dictionary_id(conn: Db, dictionary: bytes) -> int:
    """The codec id of a new dictionary: derived from its bytes (``dictionary_id``), so one id never
    names two dictionaries, even across a rolled-back transaction and another writer's training;
    the next free id on the (unlikely) collision."""
    n = dictionary_id(dictionary)
    while conn.execute("SELECT 1 FROM payload_codecs WHERE id = ?", (n,)).fetchall():
        n += 1
    return n


def _samples(conn: Db, rows: Sequence[NewLogRow]) -> list[bytes]:
    """The bytes of the first ``TRAIN_ROWS`` lines of the log (hooks and transcript lines), then the batch's."""
    out: list[bytes] = []
    size = 0
    stored = conn.execute(
        "SELECT codec, payload FROM events_raw WHERE source != 'ingestd' ORDER BY id LIMIT ?", (zdict.TRAIN_ROWS,)
    )
    for c, p in stored:
        if len(out) >= zdict.TRAIN_ROWS or size >= zdict.TRAIN_MAX_BYTES:
            break
        data = decode(conn, int(c), p)
        out.append(data)
        size += len(data)
    return out + [r.payload for r in sample_rows(rows, len(out), size)]


def _train(conn: Db, rows: Sequence[NewLogRow], codecs: Codecs, received_at: str) -> Codecs:
    """Train the dictionary when the log is first big enough; store it (in the caller's transaction)."""
    top: Any = conn.execute("SELECT max(id) FROM events_raw").fetchall()[0][0]
    logged = (int(top) if top is not None else 0) + len(rows)
    if logged < max(zdict.TRAIN_MIN_ROWS, 2 * conn.state(_Kept).failed_at):
        return codecs
    samples = _samples(conn, rows)
    if len(samples) < zdict.TRAIN_MIN_ROWS:
        return codecs
    try:
        trained = zstandard.train_dictionary(DICT_BYTES, cast(Any, samples), k=TRAIN_K, d=TRAIN_D, level=codecs.level)
    except zstandard.ZstdError as e:
        # Too little variety to train on: the rows stay plain zstd; tried again once the log
        # has doubled (not at every commit of a daemon receiving hooks).
        log.warning("payload_dictionary_not_trained", samples=len(samples), error=str(e))
        conn.state(_Kept).failed_at = logged
        return codecs
    dictionary = trained.as_bytes()
    new_id = _dictionary_id(conn, dictionary)
    conn.execute(
        "INSERT INTO payload_codecs (id, kind, dictionary, created_at) VALUES (?, 'zstd', ?, ?)",
        (new_id, dictionary, received_at),
    )
    if logs.enabled("debug"):  # structlog is imported at a first line: not for a filtered one
        log.debug("payload_dictionary_trained", codec=new_id, samples=len(samples), dictionary_bytes=len(dictionary))
    got = Codecs({**codecs.dictionaries, new_id: dictionary}, codecs.level)
    conn.state(_Kept).codecs = got
    return got


def encode_rows(conn: Db, rows: Sequence[NewLogRow]) -> list[tuple[Any, ...]]:
    """The rows as ``INSERT`` parameters: ``NewLogRow.db_tuple()`` with the payload encoded, then ``codec``.

    Inside the caller's write transaction: may train and store the dictionary (see the module
    docstring) and stores the batch's blocks of lines (``ingestd.store.payload_blocks.write``: those
    rows get a reference, codec ``blocks.BLOCK``). The idempotency key is the row's own,
    computed over the bytes as read.
    """
    codecs = _writer_codecs(conn)
    if codecs.current == PLAIN and rows:
        codecs = _train(conn, rows, codecs, max(r.received_at for r in rows))
    refs = blocks.write(conn, rows, codecs.compress, codecs.current) if codecs.current != RAW else {}
    tails = _open_rows(conn, rows, refs, codecs)
    out: list[tuple[Any, ...]] = []
    for i, r in enumerate(rows):
        t = r.db_tuple()
        got = refs.get(i)
        if got is not None:
            out.append((*t[:3], got, *t[4:], blocks.BLOCK))
            continue
        got = tails.get(i)
        if got is not None:
            out.append((*t[:3], got, *t[4:], opened.OPEN))
            continue
        codec, blob = codecs.encode(t[3])
        out.append((*t[:3], blob, *t[4:], codec))
    return out


def _open_rows(conn: Db, rows: Sequence[NewLogRow], refs: Mapping[int, bytes], codecs: Codecs) -> dict[int, bytes]:
    """The batch's new transcript lines that no block took, appended to their open blocks
    (``ingestd.store.payload_open``, migration 0019), then idle open blocks sealed; row index ->
    reference. Nothing for a batch without such lines (a hook's writes add no statement), before
    the database has a codec (``RAW``) or the migration."""
    if codecs.current == RAW:
        return {}
    rest = [i for i in blocks.first_lines(rows) if i not in refs]
    if not rest or not opened.has_tables(conn):
        return {}

    def read_back(c: int, stored: bytes) -> bytes:
        return _per_row(conn, c, stored)

    out = opened.append(conn, rows, blocks.new_rows(conn, rows, rest), codecs.encode, codecs.compress, read_back)
    opened.seal_idle(conn, max(r.received_at for r in rows), codecs.compress, read_back)
    return out


def register_sql(conn: Db) -> None:
    """Make ``payload_bytes(codec, payload)`` callable in SQL on ``conn``: ``decode`` as a function,
    for ad hoc queries and tests (``SELECT payload_bytes(codec, payload) FROM events_raw``)."""

    def payload_bytes(*args: Any) -> Any:
        codec, blob = args
        return decode(conn, int(codec), blob)

    conn.create_scalar_function("payload_bytes", payload_bytes, 2, deterministic=True)
