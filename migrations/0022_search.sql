-- 0022: the full-text search projection (SPEC §17: ingestd search, GET /api/search).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- search_docs names each document (ingestd.core.search: a prompt, an assistant text, a tool call's
-- input, a title or a compaction summary) by its log row and place; search_fts is a contentless
-- FTS5 index of their text: the text itself stays in the log (compressed), where the search reads
-- it back for snippets. The store writes a document's index entry with its row (rowid = doc_id =
-- raw_event_id * 256 + seq); deleting the row deletes the entry (contentless_delete).
CREATE TABLE search_docs (
    doc_id       INTEGER PRIMARY KEY,
    raw_event_id INTEGER NOT NULL,         -- events_raw.id of the record
    seq          INTEGER NOT NULL,         -- the document's place in the record
    session_id   TEXT NOT NULL,
    agent_id     TEXT,                     -- NULL: the session's main agent
    kind         TEXT NOT NULL CHECK (kind IN ('prompt', 'text', 'tool', 'title', 'summary')),
    occurred_at  TEXT,                     -- canonical UTC; NULL: the record has no valid time
    label        TEXT,                     -- tool name, or the title record's kind
    uuid         TEXT                      -- the record's uuid (copies in a resumed session share it)
);

CREATE VIRTUAL TABLE search_fts USING fts5(
    text, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER search_docs_delete AFTER DELETE ON search_docs BEGIN
    DELETE FROM search_fts WHERE rowid = old.doc_id;
END;
