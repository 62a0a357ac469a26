-- 0016: transcript lines stored in compressed blocks (SPEC §11: a database at most a third of the
-- corpus; SPEC §3: reading a payload gives back the exact bytes).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- A large batch's consecutive lines of one transcript are compressed together, in blocks of about
-- 256 KiB of lines (measured: 8.8x on the real corpus against 4.3x for lines compressed one by
-- one). Each line's events_raw row keeps its own row, key and columns; its payload is then a small
-- reference into one block (events_raw.codec -1: block id, offset and length in the block's bytes,
-- and the CRC-32 of the whole block's bytes), read back by ingestd.store.payload_blocks. Hooks,
-- small batches and every row written before this migration keep their codec (0, 1 or a
-- dictionary): nothing is rewritten.
CREATE TABLE payload_blocks (
    id    INTEGER PRIMARY KEY,
    codec INTEGER NOT NULL CHECK (codec >= 1),  -- payload_codecs id the block's zstd frame was written with
    data  BLOB NOT NULL                         -- one zstd frame: the lines' bytes, concatenated
);

-- A block is needed to read every row that refers to it: append-only, as the log.
CREATE TRIGGER payload_blocks_no_update BEFORE UPDATE ON payload_blocks
BEGIN
    SELECT RAISE(ABORT, 'payload_blocks is append-only: a block is never changed');
END;
CREATE TRIGGER payload_blocks_no_delete BEFORE DELETE ON payload_blocks
BEGIN
    SELECT RAISE(ABORT, 'payload_blocks is append-only: a block is never deleted');
END;
