-- 0001: the whole schema of SPEC §3-§5.
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
-- A change ships as a new numbered migration.

-- §3 The log. Append-only: the two triggers below abort UPDATE and DELETE.
-- The idempotency key for transcript lines begins with the origin's short hash
-- and the zero-padded byte offset, so index appends within a file are sequential.
CREATE TABLE events_raw (
    id              INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    source          TEXT NOT NULL CHECK (source IN ('hook', 'jsonl', 'ingestd')),
    event_type      TEXT NOT NULL,
    payload         TEXT NOT NULL,          -- the bytes exactly as read (stored as a BLOB value)
    received_at     TEXT NOT NULL,          -- canonical UTC, receipt time
    session_id      TEXT,                   -- the session the row belongs to (NULL: unknown)
    origin          TEXT NOT NULL,          -- transcript path relative to its projects root, or 'hook'
    origin_gen      INTEGER NOT NULL DEFAULT 0, -- rewrite generation of the origin (bumped by file_reset)
    origin_offset   INTEGER                 -- byte offset of the line in the origin (NULL for hooks)
);
CREATE INDEX events_raw_session ON events_raw (session_id, id);
CREATE INDEX events_raw_origin ON events_raw (origin, origin_gen, origin_offset);

CREATE TRIGGER events_raw_no_update BEFORE UPDATE ON events_raw
BEGIN
    SELECT RAISE(ABORT, 'events_raw is append-only: rows are never updated');
END;
CREATE TRIGGER events_raw_no_delete BEFORE DELETE ON events_raw
BEGIN
    SELECT RAISE(ABORT, 'events_raw is append-only: rows are never deleted');
END;

-- §4.1
CREATE TABLE sessions (
    id                 TEXT PRIMARY KEY,
    project_slug       TEXT,
    project_path       TEXT,        -- the records' cwd, verbatim
    started_at         TEXT,
    last_activity_at   TEXT,
    status             TEXT NOT NULL DEFAULT 'unknown'
                       CHECK (status IN ('working', 'waiting', 'completed', 'error', 'unknown')),
    git_branch         TEXT,
    cc_version         TEXT,
    title              TEXT,
    slug               TEXT,        -- Claude Code's human-readable session name
    entrypoint         TEXT,
    end_reason         TEXT         -- SessionEnd reason, when one arrived
);
CREATE INDEX sessions_last_activity ON sessions (last_activity_at);
CREATE INDEX sessions_project ON sessions (project_path);

-- §4.2
CREATE TABLE agents (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions (id) DEFERRABLE INITIALLY DEFERRED,
    type            TEXT NOT NULL CHECK (type IN ('main', 'subagent')),
    subagent_type   TEXT,
    status          TEXT NOT NULL CHECK (status IN ('working', 'waiting', 'completed', 'error', 'unknown')),
    parent_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
    first_seen_at   TEXT,
    last_seen_at    TEXT,
    outcome_cause   TEXT CHECK (outcome_cause IS NULL OR outcome_cause IN
                    ('concurrency_limit', 'user_interrupt', 'permission_failed',
                     'dispatch_unavailable', 'terminated_early', 'unclassified')),
    is_compaction   INTEGER NOT NULL DEFAULT 0,
    description     TEXT
);
CREATE INDEX agents_session ON agents (session_id);
CREATE INDEX agents_parent ON agents (parent_agent_id);
CREATE INDEX agents_status ON agents (status, last_seen_at);

-- §4.3 One current edge per child: UNIQUE (session_id, child_agent_id) lets a
-- better piece of evidence correct the parent in place.
CREATE TABLE orchestration_edges (
    id              INTEGER PRIMARY KEY,
    session_id      TEXT NOT NULL,
    parent_agent_id TEXT NOT NULL,
    child_agent_id  TEXT NOT NULL,
    source          TEXT NOT NULL CHECK (source IN
                    ('tool_use', 'directory', 'task_notification', 'queue_operation', 'legacy_explore')),
    instance        TEXT NOT NULL,
    host_id         TEXT NOT NULL,
    created_at      TEXT,
    tool_use_id     TEXT,
    UNIQUE (session_id, parent_agent_id, child_agent_id),
    UNIQUE (session_id, child_agent_id)
);
CREATE INDEX edges_parent ON orchestration_edges (parent_agent_id);
CREATE INDEX edges_child ON orchestration_edges (child_agent_id);

-- §4.4 Five rows per billed message.
CREATE TABLE token_usage (
    id                     INTEGER PRIMARY KEY,
    session_id             TEXT NOT NULL,
    agent_id               TEXT,
    message_id             TEXT NOT NULL,
    model                  TEXT NOT NULL,
    bucket                 TEXT NOT NULL CHECK (bucket IN
                           ('input', 'output', 'cache_read', 'cache_write_5m', 'cache_write_1h')),
    tokens                 INTEGER NOT NULL CHECK (tokens >= 0),
    is_compaction_baseline INTEGER NOT NULL DEFAULT 0,
    occurred_at            TEXT NOT NULL,
    claim_rank             INTEGER NOT NULL DEFAULT 0, -- precedence of the evidence (§4.4)
    UNIQUE (message_id, bucket)
);
CREATE INDEX token_usage_session ON token_usage (session_id);
CREATE INDEX token_usage_agent ON token_usage (agent_id);
CREATE INDEX token_usage_time ON token_usage (occurred_at, id);
CREATE INDEX token_usage_model ON token_usage (model, bucket, occurred_at);

-- §4.5
CREATE TABLE tool_calls (
    session_id  TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    agent_id    TEXT,
    tool_name   TEXT,
    started_at  TEXT,
    ended_at    TEXT,
    status      TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'denied', 'interrupted')),
    PRIMARY KEY (session_id, tool_use_id)
) WITHOUT ROWID;
CREATE INDEX tool_calls_agent ON tool_calls (agent_id);

-- §4.6
CREATE TABLE compactions (
    session_id  TEXT NOT NULL,
    boundary_id TEXT NOT NULL,      -- the compact_boundary record's uuid
    agent_id    TEXT,
    occurred_at TEXT,
    trigger     TEXT CHECK (trigger IS NULL OR trigger IN ('auto', 'manual')),
    pre_tokens  INTEGER,
    PRIMARY KEY (session_id, boundary_id)
) WITHOUT ROWID;

-- §4.7 Identifiers only, never payload text. The one prunable projection.
CREATE TABLE events (
    raw_event_id INTEGER PRIMARY KEY,   -- events_raw.id
    session_id   TEXT,
    agent_id     TEXT,
    event_type   TEXT NOT NULL,
    occurred_at  TEXT NOT NULL          -- receipt time (events_raw.received_at)
);
CREATE INDEX events_time ON events (occurred_at, raw_event_id);
CREATE INDEX events_session ON events (session_id);

-- §5.1
CREATE TABLE model_pricing (
    model          TEXT NOT NULL,
    bucket         TEXT NOT NULL CHECK (bucket IN
                   ('input', 'output', 'cache_read', 'cache_write_5m', 'cache_write_1h')),
    usd_per_mtok   REAL NOT NULL CHECK (usd_per_mtok >= 0),
    effective_from TEXT NOT NULL,
    source         TEXT NOT NULL,       -- where the rate came from
    verified_at    TEXT,                -- when it was last checked against the source
    PRIMARY KEY (model, bucket, effective_from)
);

-- §5.3 Tokens and the resolved rate row, never dollars. Keyed by the UTC
-- quarter-hour `slot` (not the UTC day): every local day of every time zone is
-- a union of quarter-hours, so `cost --by day --tz` stays exact.
-- rate_effective_from = '' is the unpriced sentinel.
CREATE TABLE token_usage_rollup (
    session_id          TEXT NOT NULL,
    model               TEXT NOT NULL,
    bucket              TEXT NOT NULL,
    slot                TEXT NOT NULL,
    rate_effective_from TEXT NOT NULL,
    tokens              INTEGER NOT NULL,
    row_count           INTEGER NOT NULL,
    PRIMARY KEY (session_id, model, bucket, slot, rate_effective_from)
) WITHOUT ROWID;
CREATE INDEX rollup_slot ON token_usage_rollup (slot);

-- §7 Per-file tail state, committed with the rows it produced.
CREATE TABLE ingest_checkpoints (
    root            TEXT NOT NULL,
    origin          TEXT NOT NULL,   -- path relative to root
    session_id      TEXT,
    origin_gen      INTEGER NOT NULL DEFAULT 0,
    committed_offset INTEGER NOT NULL,
    size            INTEGER NOT NULL,
    mtime_ns        INTEGER NOT NULL,
    inode           INTEGER NOT NULL,
    head_hash       TEXT NOT NULL,   -- hash of the bytes just before committed_offset (rewrite detection)
    ingest_revision INTEGER NOT NULL,
    updated_at      TEXT NOT NULL,
    PRIMARY KEY (root, origin)
) WITHOUT ROWID;

-- §8 One receipt per prune run.
CREATE TABLE prune_receipts (
    id          INTEGER PRIMARY KEY,
    ran_at      TEXT NOT NULL,
    target      TEXT NOT NULL,       -- table or 'backups'
    cutoff      TEXT NOT NULL,
    rows        INTEGER NOT NULL,
    dry_run     INTEGER NOT NULL DEFAULT 0,
    max_raw_event_id INTEGER         -- log watermark at prune time, so replay does not resurrect
);

-- Skipped lines and other counters the status report shows.
CREATE TABLE ingest_stats (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT
) WITHOUT ROWID;
