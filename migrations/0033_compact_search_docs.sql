-- 0033: the search documents in a compact table behind the view search_docs (SPEC §11: a
-- database at most a third of the corpus).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- search_docs kept in every row the session id (36 characters), the record's uuid (36), its time
-- as text (24), the kind as text, and raw_event_id and seq, which doc_id already packs
-- (raw_event_id * 256 + seq): 1.8 MB of the c100 corpus's 34.8 MB database. search_doc_rows keeps:
--   doc_id  as before (the full-text index's rowid);
--   sid     the session's log_sessions.id (the log names every session it folds);
--   kind    0-4 for 'prompt', 'text', 'tool', 'title', 'summary';
--   at      the time as integer milliseconds since the epoch when it is canonical UTC from 1970
--           on, else its text (NULL: no valid time), as log_rows.received;
--   uuid    16 bytes when it is a lowercase 8-4-4-4-12 hex uuid, else its text.
-- The view search_docs gives back every column and value it had. ingestd writes search_doc_rows
-- (ingestd.store.upsert); documents are only ever deleted all together (a re-projection).
CREATE TABLE search_doc_rows (
    doc_id   INTEGER PRIMARY KEY,
    sid      INTEGER NOT NULL,        -- log_sessions.id of the document's session
    agent_id TEXT,                    -- NULL: the session's main agent
    kind     INTEGER NOT NULL CHECK (kind IN (0, 1, 2, 3, 4)),
    at,                               -- occurred_at: integer ms since the epoch, or its text, or NULL
    label    TEXT,                    -- tool name, or the title record's kind
    uuid                              -- the record's uuid: 16 bytes, or its text, or NULL
);

INSERT INTO log_sessions (session_id)
SELECT session_id FROM search_docs
 WHERE session_id NOT IN (SELECT session_id FROM log_sessions)
 GROUP BY session_id ORDER BY min(doc_id);

INSERT INTO search_doc_rows (doc_id, sid, agent_id, kind, at, label, uuid)
SELECT d.doc_id, s.id, d.agent_id,
       CASE d.kind WHEN 'prompt' THEN 0 WHEN 'text' THEN 1 WHEN 'tool' THEN 2 WHEN 'title' THEN 3 ELSE 4 END,
       CASE WHEN d.ms >= 0 AND strftime('%Y-%m-%dT%H:%M:%S', d.ms / 1000, 'unixepoch') || '.'
                               || printf('%03d', d.ms % 1000) || 'Z' = d.occurred_at
            THEN d.ms ELSE d.occurred_at END,
       d.label,
       CASE WHEN d.uuid GLOB '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-'
                             || '[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-'
                             || '[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-'
                             || '[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
            THEN unhex(replace(d.uuid, '-', '')) ELSE d.uuid END
  FROM (SELECT search_docs.*,
               CASE WHEN occurred_at GLOB
                         '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
                    THEN unixepoch(substr(occurred_at, 1, 19)) * 1000 + CAST(substr(occurred_at, 21, 3) AS INTEGER)
               END AS ms
          FROM search_docs) d
  JOIN log_sessions s ON s.session_id = d.session_id
 ORDER BY d.doc_id;

CREATE TEMP TABLE migration_0033_check (same INTEGER NOT NULL CHECK (same = 1));
INSERT INTO migration_0033_check
SELECT (SELECT count(*) FROM search_docs) = (SELECT count(*) FROM search_doc_rows)
   AND (SELECT count(*) FROM search_docs WHERE raw_event_id * 256 + seq <> doc_id OR seq NOT BETWEEN 0 AND 255) = 0;
DROP TABLE migration_0033_check;

DROP TABLE search_docs;

CREATE VIEW search_docs (doc_id, raw_event_id, seq, session_id, agent_id, kind, occurred_at, label, uuid) AS
SELECT d.doc_id, d.doc_id / 256, d.doc_id % 256, s.session_id, d.agent_id,
       CASE d.kind WHEN 0 THEN 'prompt' WHEN 1 THEN 'text' WHEN 2 THEN 'tool' WHEN 3 THEN 'title' ELSE 'summary' END,
       CASE WHEN typeof(d.at) = 'integer'
            THEN strftime('%Y-%m-%dT%H:%M:%S', d.at / 1000, 'unixepoch') || '.' || printf('%03d', d.at % 1000) || 'Z'
            ELSE d.at END,
       d.label,
       CASE WHEN typeof(d.uuid) = 'blob'
            THEN lower(hex(substr(d.uuid, 1, 4)) || '-' || hex(substr(d.uuid, 5, 2)) || '-' || hex(substr(d.uuid, 7, 2))
                       || '-' || hex(substr(d.uuid, 9, 2)) || '-' || hex(substr(d.uuid, 11, 6)))
            ELSE d.uuid END
  FROM search_doc_rows d
  JOIN log_sessions s ON s.id = d.sid;
