-- 0007: the agent kinds and spawn evidence of Claude Code 2.1.332, as SQLite's 0020: agents.type
-- gains 'teammate', agents gains `name`, orchestration_edges.source gains 'sidecar' and 'fork'.
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py PG_PINS.
ALTER TABLE agents DROP CONSTRAINT agents_type_check;
ALTER TABLE agents ADD CONSTRAINT agents_type_check CHECK (type IN ('main', 'subagent', 'teammate'));
ALTER TABLE agents ADD COLUMN name text;
ALTER TABLE orchestration_edges DROP CONSTRAINT orchestration_edges_source_check;
ALTER TABLE orchestration_edges ADD CONSTRAINT orchestration_edges_source_check CHECK (source IN
    ('tool_use', 'directory', 'task_notification', 'queue_operation', 'legacy_explore', 'sidecar', 'fork'));
