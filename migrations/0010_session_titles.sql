-- 0010: session titles by precedence, and summaries joined to the session they describe (SPEC §4.1).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- sessions.title_source says which kind of record gave sessions.title: 'custom-title' (a /rename),
-- 'session_title' (a hook's current name), 'ai-title', or 'summary'; NULL with no title.
-- A `summary` record (1.0.x) sits at the top of one file but describes the conversation its
-- leafUuid points into, often the previous session's (its history copied into this file):
-- it is kept here by its place in the log, and leaf_session is the session of the record whose
-- uuid is leaf_uuid, looked up among the records of the same file (ingestd.store.titles);
-- NULL while no such record is known (then the summary titles no session).
ALTER TABLE sessions ADD COLUMN title_source TEXT
    CHECK (title_source IS NULL OR title_source IN ('custom-title', 'session_title', 'ai-title', 'summary'));
-- Existing titles get their source when the projection revision bump (6) re-projects the log.

CREATE TABLE summaries (
    origin        TEXT NOT NULL,     -- the file holding the summary record
    origin_gen    INTEGER NOT NULL,
    origin_offset INTEGER NOT NULL,
    file_session  TEXT NOT NULL,     -- the session of the summary's own log row (its file's)
    leaf_uuid     TEXT NOT NULL,
    summary       TEXT NOT NULL,
    leaf_session  TEXT,              -- the session of the leaf record, once found
    leaf_at       TEXT,              -- that record's timestamp (the latest summary of a session wins)
    PRIMARY KEY (origin, origin_gen, origin_offset)
) WITHOUT ROWID;
CREATE INDEX summaries_leaf_session ON summaries (leaf_session, leaf_at);
