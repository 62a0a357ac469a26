-- The central store's rate_limit_samples (SPEC §13, §15): the local table's columns
-- (ingestd/migrations/0021_rate_limit_samples.sql) with the host whose log holds the snapshot.
-- raw_event_id is the central events_raw.id, as for events.
CREATE TABLE rate_limit_samples (
    raw_event_id        bigint PRIMARY KEY,
    host_id             text COLLATE "C" NOT NULL,
    session_id          text COLLATE "C" NOT NULL,
    sampled_at          text COLLATE "C" NOT NULL,
    model               text,
    five_hour_pct       double precision,
    five_hour_resets_at text COLLATE "C",
    five_hour_flag      text,
    seven_day_pct       double precision,
    seven_day_resets_at text COLLATE "C",
    seven_day_flag      text,
    cc_cost_usd         double precision,
    context_used_pct    double precision,
    cc_version          text
);
CREATE INDEX rate_limit_samples_time ON rate_limit_samples (sampled_at, raw_event_id);
CREATE INDEX rate_limit_samples_session ON rate_limit_samples (session_id, sampled_at);
