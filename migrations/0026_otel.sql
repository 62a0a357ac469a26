-- 0026: Claude Code's own telemetry, reconciled with the transcripts (SPEC §17).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- The log already admits source 'otlp' (0021). Two projections of its rows
-- (ingestd.core.otelfold):
--   otel_requests: one row per api_request / api_error event; an api_request a transcript message
--     explains names it (message_id, matched_by) and says whether the figures agree; one no
--     transcript explains names its own token_usage row (usage_id: 'otel:<session>:<key>',
--     claim_rank -1), which the fold retracts when a transcript message later explains it;
--   otel_metric_points: every metric data point as sent (deltas summed by readers, never added to
--     the exact figures).
CREATE TABLE otel_requests (
    session_id     TEXT NOT NULL,
    request_key    TEXT NOT NULL,           -- '<timeUnixNano>:<event.sequence>'
    raw_event_id   INTEGER NOT NULL,        -- events_raw.id
    event          TEXT NOT NULL,           -- api_request | api_error
    occurred_at    TEXT NOT NULL,
    prompt_id      TEXT,
    request_id     TEXT,
    query_source   TEXT,
    model          TEXT,
    agent_id       TEXT,
    input          INTEGER NOT NULL DEFAULT 0,
    output         INTEGER NOT NULL DEFAULT 0,
    cache_read     INTEGER NOT NULL DEFAULT 0,
    cache_write_5m INTEGER NOT NULL DEFAULT 0,
    cache_write_1h INTEGER NOT NULL DEFAULT 0,
    split_known    INTEGER NOT NULL DEFAULT 0, -- 0: cache_creation_tokens put in 5m (remainder rule)
    cc_cost_usd    REAL,                    -- Claude Code's cost_usd
    duration_ms    INTEGER,
    message_id     TEXT,                    -- the transcript message it is evidence of
    matched_by     TEXT CHECK (matched_by IS NULL OR matched_by IN ('request_id', 'message_uuid', 'tokens')),
    usage_id       TEXT,                    -- token_usage.message_id of its own row (unmatched)
    agrees         INTEGER,                 -- matched: 1 the figures equal the message's, 0 not
    mismatch       TEXT,
    error          TEXT,
    PRIMARY KEY (session_id, request_key)
);
CREATE INDEX otel_requests_time ON otel_requests (occurred_at);

CREATE TABLE otel_metric_points (
    raw_event_id INTEGER PRIMARY KEY,       -- events_raw.id
    session_id   TEXT NOT NULL,
    name         TEXT NOT NULL,
    unit         TEXT NOT NULL,
    attributes   TEXT NOT NULL,             -- JSON object (session.id, user.id left out)
    start_at     TEXT,
    end_at       TEXT,
    temporality  INTEGER,                   -- 1 delta, 2 cumulative
    value        REAL
);
CREATE INDEX otel_metric_points_session ON otel_metric_points (session_id, name);
