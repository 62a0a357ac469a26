-- 0025: what Claude Code 2.1.3xx writes about its own totals and prompts (docs/events.md §2).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- sessions: `cc_cost_usd` (the latest `cost-state` record's totalCostUSD: Claude Code's own total,
-- shown beside ingestd's, never added) and `last_prompt` (the latest `last-prompt` record's text).
-- cc_model_usage: that record's modelUsage, one row per model. prompts: the session's user prompts
-- (promptId / prompt_id, 2.1.196+), so a prompt's work can be grouped. Columns are added in place;
-- the projection revision bump re-projects every database from its log on the first open by a writer.
ALTER TABLE sessions ADD COLUMN cc_cost_usd REAL;
ALTER TABLE sessions ADD COLUMN last_prompt TEXT;

CREATE TABLE cc_model_usage (
    session_id            TEXT NOT NULL,
    model                 TEXT NOT NULL,
    input_tokens          INTEGER,   -- NULL: not in the latest cost-state record
    output_tokens         INTEGER,
    cache_read_tokens     INTEGER,
    cache_write_5m_tokens INTEGER,
    cache_write_1h_tokens INTEGER,
    web_search_requests   INTEGER,
    cost_usd              REAL,      -- Claude Code's price of them
    PRIMARY KEY (session_id, model)
) WITHOUT ROWID;

CREATE TABLE prompts (
    session_id   TEXT NOT NULL,
    prompt_id    TEXT NOT NULL,
    prompt_index INTEGER,            -- turnPosition.promptIndex (2.1.3xx)
    text         TEXT,               -- what the person typed, NULL when no record says it
    first_at     TEXT,
    last_at      TEXT,
    PRIMARY KEY (session_id, prompt_id)
) WITHOUT ROWID;
