-- 0009: what the hook events and records of Claude Code 2.1.332 say beyond activity, as SQLite's
-- 0023: tool_calls.prompt_id / reason, events.prompt_id, sessions.error_type / switched_to_model /
-- unmatched_notices, compactions.summary, the tasks table.
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py PG_PINS.
ALTER TABLE tool_calls ADD COLUMN prompt_id text COLLATE "C";
ALTER TABLE tool_calls ADD COLUMN reason text;
ALTER TABLE events ADD COLUMN prompt_id text COLLATE "C";
ALTER TABLE sessions ADD COLUMN error_type text;
ALTER TABLE sessions ADD COLUMN switched_to_model text;
ALTER TABLE sessions ADD COLUMN unmatched_notices bigint NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN summary text;
CREATE INDEX tool_calls_prompt ON tool_calls (session_id, prompt_id);

CREATE TABLE tasks (
    session_id   text COLLATE "C" NOT NULL,
    task_id      text COLLATE "C" NOT NULL,
    subject      text,
    description  text,
    teammate     text,
    status       text NOT NULL CHECK (status IN ('pending', 'completed')),
    created_at   text COLLATE "C",
    completed_at text COLLATE "C",
    PRIMARY KEY (session_id, task_id)
);
