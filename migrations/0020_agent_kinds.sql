-- 0020: the agent kinds and spawn evidence of Claude Code 2.1.332 (docs/claude-code.md §5).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- agents.type gains 'teammate' (an agent-teams member under its lead session) and agents gains
-- `name` (the name a spawn gave its agent: the `.meta.json` sidecar's `name`, a teammate's name).
-- orchestration_edges.source gains 'sidecar' (the subagent's own `.meta.json` `toolUseId` names its
-- spawn) and 'fork' (a session forked from another). SQLite cannot change a CHECK in place: both
-- tables are rebuilt, their rows copied as they are (name NULL); the projection revision bump
-- re-projects every database from its log on the first open by a writer.
CREATE TABLE agents_v20 (
    id              TEXT NOT NULL,
    session_id      TEXT NOT NULL REFERENCES sessions (id) DEFERRABLE INITIALLY DEFERRED,
    type            TEXT NOT NULL CHECK (type IN ('main', 'subagent', 'teammate')),
    subagent_type   TEXT,
    status          TEXT NOT NULL CHECK (status IN ('working', 'waiting', 'completed', 'error', 'unknown')),
    parent_agent_id TEXT,
    first_seen_at   TEXT,
    last_seen_at    TEXT,
    outcome_cause   TEXT CHECK (outcome_cause IS NULL OR outcome_cause IN
                    ('concurrency_limit', 'user_interrupt', 'permission_failed',
                     'dispatch_unavailable', 'terminated_early', 'unclassified')),
    is_compaction   INTEGER NOT NULL DEFAULT 0,
    description     TEXT,
    evidence_status TEXT CHECK (evidence_status IS NULL OR evidence_status IN
                    ('working', 'waiting', 'completed', 'error', 'unknown')),
    name            TEXT,
    PRIMARY KEY (session_id, id),
    FOREIGN KEY (session_id, parent_agent_id) REFERENCES agents_v20 (session_id, id)
        DEFERRABLE INITIALLY DEFERRED
);
INSERT INTO agents_v20 (id, session_id, type, subagent_type, status, parent_agent_id, first_seen_at,
                        last_seen_at, outcome_cause, is_compaction, description, evidence_status)
SELECT id, session_id, type, subagent_type, status, parent_agent_id, first_seen_at,
       last_seen_at, outcome_cause, is_compaction, description, evidence_status
FROM agents;
DROP TABLE agents;
ALTER TABLE agents_v20 RENAME TO agents;
CREATE INDEX agents_parent ON agents (session_id, parent_agent_id);
CREATE INDEX agents_status ON agents (status, last_seen_at);
CREATE TRIGGER agents_parent_set_null AFTER DELETE ON agents
BEGIN
    UPDATE agents SET parent_agent_id = NULL
    WHERE session_id = OLD.session_id AND parent_agent_id = OLD.id;
END;

CREATE TABLE orchestration_edges_v20 (
    id              INTEGER PRIMARY KEY,
    session_id      TEXT NOT NULL,
    parent_agent_id TEXT NOT NULL,
    child_agent_id  TEXT NOT NULL,
    source          TEXT NOT NULL CHECK (source IN
                    ('tool_use', 'directory', 'task_notification', 'queue_operation', 'legacy_explore',
                     'sidecar', 'fork')),
    instance        TEXT NOT NULL,
    host_id         TEXT NOT NULL,
    created_at      TEXT,
    tool_use_id     TEXT,
    UNIQUE (session_id, parent_agent_id, child_agent_id),
    UNIQUE (session_id, child_agent_id)
);
INSERT INTO orchestration_edges_v20 SELECT id, session_id, parent_agent_id, child_agent_id, source, instance,
                                           host_id, created_at, tool_use_id
FROM orchestration_edges;
DROP TABLE orchestration_edges;
ALTER TABLE orchestration_edges_v20 RENAME TO orchestration_edges;
CREATE INDEX edges_parent ON orchestration_edges (parent_agent_id);
CREATE INDEX edges_child ON orchestration_edges (child_agent_id);
