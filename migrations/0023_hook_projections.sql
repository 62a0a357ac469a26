-- 0023: what the hook events and records of Claude Code 2.1.332 say beyond activity (docs/events.md).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- tool_calls: `prompt_id` (the user prompt whose turn made the call: the hooks' `prompt_id`, a
-- tool_result record's `promptId`) and `reason` (why a PermissionDenied refused it). events:
-- `prompt_id`. sessions: `error_type` (the StopFailure `error` of the main agent's latest turn end),
-- `switched_to_model` (the latest PostModelSwitch's `to_model`), `unmatched_notices` (the
-- task-notifications that name no agent). compactions: `summary` (the compaction's summary record).
-- tasks: the session's task list (TaskCreated / TaskCompleted). Columns are added in place; the
-- projection revision bump re-projects every database from its log on the first open by a writer.
ALTER TABLE tool_calls ADD COLUMN prompt_id TEXT;
ALTER TABLE tool_calls ADD COLUMN reason TEXT;
ALTER TABLE events ADD COLUMN prompt_id TEXT;
ALTER TABLE sessions ADD COLUMN error_type TEXT;
ALTER TABLE sessions ADD COLUMN switched_to_model TEXT;
ALTER TABLE sessions ADD COLUMN unmatched_notices INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN summary TEXT;
CREATE INDEX tool_calls_prompt ON tool_calls (session_id, prompt_id);

CREATE TABLE tasks (
    session_id   TEXT NOT NULL,
    task_id      TEXT NOT NULL,     -- Claude Code's id: "1", "2", ... per session
    subject      TEXT,
    description  TEXT,
    teammate     TEXT,              -- teammate_name (agent teams), NULL for the session's own
    status       TEXT NOT NULL CHECK (status IN ('pending', 'completed')),
    created_at   TEXT,
    completed_at TEXT,
    PRIMARY KEY (session_id, task_id)
) WITHOUT ROWID;
