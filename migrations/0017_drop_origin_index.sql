-- 0017: the log's index on (origin, origin_gen, origin_offset) goes (SPEC §11: a database at most
-- a third of the corpus; the index was 3.4 MB of a 50 MB database for the 100 MB c100 corpus).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- Every row of a transcript has a key that starts with that file's hash (ingestd.core.keys:
-- lines j:<hash>:<gen>:..., file resets r:<hash>:<gen>, their quarantine markers q:<key>), so the
-- UNIQUE index on idempotency_key already orders a file's rows together: the three lookups by
-- file (titles, a checkpoint's trust, sessions to restore) read a range of it instead
-- (ingestd.core.keys.origin_key_ranges). Dropping an index rewrites no row.
DROP INDEX IF EXISTS events_raw_origin;
