-- 0028: what a session says of the session it was forked from (DESIGN.md "Forks").
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- sessions: `root_uuid` (the uuid of the main transcript's first record with a null parentUuid:
-- a fork's copies start at its parent's root), `forked_from` (a record's forkedFrom.sessionId,
-- written by /branch), `fork_start` (a SessionStart said source "fork"). The parent is joined
-- across sessions when read (ingestd.report.forks). Columns are added in place; the projection
-- revision bump re-projects every database from its log on the first open by a writer.
ALTER TABLE sessions ADD COLUMN root_uuid TEXT;
ALTER TABLE sessions ADD COLUMN forked_from TEXT;
ALTER TABLE sessions ADD COLUMN fork_start INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_root_uuid ON sessions (root_uuid) WHERE root_uuid IS NOT NULL;
CREATE INDEX sessions_forked_from ON sessions (forked_from) WHERE forked_from IS NOT NULL;
