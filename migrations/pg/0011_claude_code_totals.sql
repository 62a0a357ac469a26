-- 0011: Claude Code's own totals and the session's prompts, as SQLite's 0025: sessions.cc_cost_usd /
-- last_prompt, the cc_model_usage and prompts tables.
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py PG_PINS.
ALTER TABLE sessions ADD COLUMN cc_cost_usd double precision;
ALTER TABLE sessions ADD COLUMN last_prompt text;

CREATE TABLE cc_model_usage (
    session_id            text COLLATE "C" NOT NULL,
    model                 text COLLATE "C" NOT NULL,
    input_tokens          bigint,
    output_tokens         bigint,
    cache_read_tokens     bigint,
    cache_write_5m_tokens bigint,
    cache_write_1h_tokens bigint,
    web_search_requests   bigint,
    cost_usd              double precision,
    PRIMARY KEY (session_id, model)
);

CREATE TABLE prompts (
    session_id   text COLLATE "C" NOT NULL,
    prompt_id    text COLLATE "C" NOT NULL,
    prompt_index bigint,
    text         text,
    first_at     text COLLATE "C",
    last_at      text COLLATE "C",
    PRIMARY KEY (session_id, prompt_id)
);
