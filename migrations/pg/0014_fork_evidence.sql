-- 0014: a session's fork evidence, as SQLite's 0028: sessions.root_uuid / forked_from / fork_start.
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py PG_PINS.
ALTER TABLE sessions ADD COLUMN root_uuid text COLLATE "C";
ALTER TABLE sessions ADD COLUMN forked_from text COLLATE "C";
ALTER TABLE sessions ADD COLUMN fork_start bigint NOT NULL DEFAULT 0;
CREATE INDEX sessions_root_uuid ON sessions (root_uuid) WHERE root_uuid IS NOT NULL;
CREATE INDEX sessions_forked_from ON sessions (forked_from) WHERE forked_from IS NOT NULL;
