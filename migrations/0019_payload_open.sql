-- 0019: the lines a tail adds (a few at a time, as Claude Code writes them) gathered into blocks
-- as they arrive (SPEC §11: a database at most a third of the corpus; SPEC §3: reading a payload
-- gives back the exact bytes). Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- 0016 compresses a large batch's lines of one transcript together (8.8x on the real corpus), but
-- the daemon's tailer writes a transcript two or three lines at a time, and those were compressed
-- one by one (4.3x): a database the daemon filled over months held its payloads at half the ratio
-- of a backfill's. Now such a line is appended to its transcript's open block: its events_raw row
-- (codec -2) holds a reference (open block id, offset and length in the block's bytes, CRC-32 of
-- the line), and until the block is sealed the line waits in payload_open, compressed alone as
-- before. Sealing (the block reached 256 KiB of lines, or nothing was appended to it for an hour)
-- writes the lines as one payload_blocks frame, records where in payload_sealed, and deletes the
-- waiting copies, in one transaction: the log row never changes, and every moment one of the two
-- holds its bytes. Nothing written before this migration is rewritten.
CREATE TABLE payload_open_blocks (
    id         INTEGER PRIMARY KEY,   -- never reused: above every payload_sealed.open_id
    origin     TEXT NOT NULL,         -- the transcript (events_raw.origin) and its generation
    origin_gen INTEGER NOT NULL,
    size       INTEGER NOT NULL,      -- bytes of lines appended (the next line's offset)
    updated_at TEXT NOT NULL,         -- received_at of its newest line (sealed when idle)
    UNIQUE (origin, origin_gen)
);
CREATE INDEX payload_open_blocks_updated ON payload_open_blocks (updated_at);

-- A rowid table (not WITHOUT ROWID, whose rows spill to an overflow page past about 1 KB): the lines
-- are a few hundred bytes to a few KB each.
CREATE TABLE payload_open (
    open_id INTEGER NOT NULL,         -- payload_open_blocks.id
    offset  INTEGER NOT NULL,         -- byte offset of the line in the block's bytes
    codec   INTEGER NOT NULL,         -- how data is stored, as events_raw.codec (0, 1 or a dictionary)
    data    BLOB NOT NULL,            -- the line, stored alone
    UNIQUE (open_id, offset)
);

CREATE TABLE payload_sealed (
    open_id  INTEGER PRIMARY KEY,     -- the open block's id, as the log rows' references name it
    block_id INTEGER NOT NULL,        -- the payload_blocks row its lines were sealed into
    crc      INTEGER NOT NULL         -- CRC-32 of the block's bytes (keys the block read cache)
);

-- Needed to read every row sealed into a block: append-only, as the log and the blocks.
CREATE TRIGGER payload_sealed_no_update BEFORE UPDATE ON payload_sealed
BEGIN
    SELECT RAISE(ABORT, 'payload_sealed is append-only: a sealed block is never moved');
END;
CREATE TRIGGER payload_sealed_no_delete BEFORE DELETE ON payload_sealed
BEGIN
    SELECT RAISE(ABORT, 'payload_sealed is append-only: a sealed block is never moved');
END;
