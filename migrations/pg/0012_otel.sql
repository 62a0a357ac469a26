-- The central store's otel_requests and otel_metric_points (SPEC §13, §17): the local tables'
-- columns (ingestd/migrations/0026_otel.sql) with the host whose log holds the event.
-- raw_event_id is the central events_raw.id, as for events.
CREATE TABLE otel_requests (
    session_id     text COLLATE "C" NOT NULL,
    request_key    text COLLATE "C" NOT NULL,
    host_id        text COLLATE "C" NOT NULL,
    raw_event_id   bigint NOT NULL,
    event          text NOT NULL,
    occurred_at    text COLLATE "C" NOT NULL,
    prompt_id      text,
    request_id     text,
    query_source   text,
    model          text,
    agent_id       text,
    input          bigint NOT NULL DEFAULT 0,
    output         bigint NOT NULL DEFAULT 0,
    cache_read     bigint NOT NULL DEFAULT 0,
    cache_write_5m bigint NOT NULL DEFAULT 0,
    cache_write_1h bigint NOT NULL DEFAULT 0,
    split_known    integer NOT NULL DEFAULT 0,
    cc_cost_usd    double precision,
    duration_ms    bigint,
    message_id     text COLLATE "C",
    matched_by     text CHECK (matched_by IS NULL OR matched_by IN ('request_id', 'message_uuid', 'tokens')),
    usage_id       text COLLATE "C",
    agrees         integer,
    mismatch       text,
    error          text,
    PRIMARY KEY (session_id, request_key)
);
CREATE INDEX otel_requests_time ON otel_requests (occurred_at);

CREATE TABLE otel_metric_points (
    raw_event_id bigint PRIMARY KEY,
    host_id      text COLLATE "C" NOT NULL,
    session_id   text COLLATE "C" NOT NULL,
    name         text NOT NULL,
    unit         text NOT NULL,
    attributes   text NOT NULL,
    start_at     text COLLATE "C",
    end_at       text COLLATE "C",
    temporality  integer,
    value        double precision
);
CREATE INDEX otel_metric_points_session ON otel_metric_points (session_id, name);
