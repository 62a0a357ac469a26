-- 0022: the full-text search projection (SPEC §17: ingestd search, GET /api/search).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- search_docs names each document (ingestd.core.search: a prompt, an assistant text, a tool call's
-- input, a title or a compaction summary) by its log row and place; search_fts is a contentless
-- FTS5 index of their text: the text itself stays in the log (compressed), where the search reads
-- it back for snippets. The store writes a document's index entry with its row (rowid = doc_id =
-- raw_event_id * 256 + seq). Documents are only ever deleted all together (a re-projection), with
-- the index's 'delete-all': no contentless_delete option, which SQLite before 3.43 (Debian 12's
-- sqlite3, Python's sqlite3 there, Datasette on it) cannot open.
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
    text, content = '', tokenize = 'unicode61 remove_diacritics 2'
);
