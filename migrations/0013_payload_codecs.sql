-- 0013: the log's payloads may be stored compressed (SPEC §11: a database at most a third of the
-- corpus; SPEC §3: reading a payload gives back the exact bytes).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- events_raw.codec says how the stored payload is read back into the bytes as read:
--   0   the bytes themselves (every row written before this migration: nothing is rewritten);
--   n   a zstd frame written with payload_codecs row n (1: no dictionary; n >= 2: that row's
--       dictionary, trained on the database's first log lines).
-- ingestd.store.payload is the one place that encodes and decodes. The idempotency key is
-- computed over the bytes as read, before encoding, as before.
ALTER TABLE events_raw ADD COLUMN codec INTEGER NOT NULL DEFAULT 0;

CREATE TABLE payload_codecs (
    id         INTEGER PRIMARY KEY CHECK (id >= 1),
    kind       TEXT NOT NULL CHECK (kind = 'zstd'),
    dictionary BLOB,                 -- a zstd dictionary (NULL: plain zstd frames)
    created_at TEXT NOT NULL,        -- canonical UTC
    CHECK ((id = 1) = (dictionary IS NULL))
);
INSERT INTO payload_codecs (id, kind, dictionary, created_at) VALUES (1, 'zstd', NULL, '2026-12-01T00:00:00.000Z');

-- A dictionary is needed to read every row written with it: append-only, as the log.
CREATE TRIGGER payload_codecs_no_update BEFORE UPDATE ON payload_codecs
BEGIN
    SELECT RAISE(ABORT, 'payload_codecs is append-only: a dictionary is never changed');
END;
CREATE TRIGGER payload_codecs_no_delete BEFORE DELETE ON payload_codecs
BEGIN
    SELECT RAISE(ABORT, 'payload_codecs is append-only: a dictionary is never deleted');
END;
