-- 0009: agents are identified by (session_id, id), not by id alone (SPEC §4.2).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- Agent ids are short (7 hex characters in 2.0.76-2.1.42, `acompact-` plus 6 hex for compaction
-- sidechains), so two sessions of one archive share ids often; with `id` as the key the session
-- ingested second lost its agent row. Every session now keeps its own agents; `parent_agent_id`
-- names an agent of the same session: the pair (session_id, parent_agent_id) references the
-- parent's key. SQLite's ON DELETE SET NULL would null every column of that pair (session_id
-- included), so the trigger below clears only parent_agent_id when a parent row goes.
-- The rows are copied as they are; the projection revision bump (ingestd.core.revision, 5)
-- re-projects every database from its log on the first open by a writer.
CREATE TABLE agents_by_session (
    id              TEXT NOT NULL,
    session_id      TEXT NOT NULL REFERENCES sessions (id) DEFERRABLE INITIALLY DEFERRED,
    type            TEXT NOT NULL CHECK (type IN ('main', 'subagent')),
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
    PRIMARY KEY (session_id, id),
    FOREIGN KEY (session_id, parent_agent_id) REFERENCES agents_by_session (session_id, id)
        DEFERRABLE INITIALLY DEFERRED
);
INSERT INTO agents_by_session (id, session_id, type, subagent_type, status, parent_agent_id, first_seen_at,
                               last_seen_at, outcome_cause, is_compaction, description, evidence_status)
SELECT a.id, a.session_id, a.type, a.subagent_type, a.status,
       CASE WHEN EXISTS (SELECT 1 FROM agents p WHERE p.id = a.parent_agent_id AND p.session_id = a.session_id)
            THEN a.parent_agent_id END,
       a.first_seen_at, a.last_seen_at, a.outcome_cause, a.is_compaction, a.description, a.evidence_status
FROM agents a;
DROP TABLE agents;
ALTER TABLE agents_by_session RENAME TO agents;
CREATE INDEX agents_parent ON agents (session_id, parent_agent_id);
CREATE INDEX agents_status ON agents (status, last_seen_at);
CREATE TRIGGER agents_parent_set_null AFTER DELETE ON agents
BEGIN
    UPDATE agents SET parent_agent_id = NULL
    WHERE session_id = OLD.session_id AND parent_agent_id = OLD.id;
END;
