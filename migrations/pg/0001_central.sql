-- pg 0001: the central store of record for team mode (SPEC §13), PostgreSQL dialect.
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py PG_PINS.
-- A change ships as a new numbered file in migrations/pg/.
--
-- Every text column that is compared or ordered (ids, canonical UTC instants) uses the "C"
-- collation, so comparisons are byte order exactly as in SQLite whatever the database's locale.

-- Hosts: one row per machine that ships (host_id = the local database's meta.host_id).
-- shipped_through is the per-host high-water mark: the local events_raw.id of the last row
-- shipped, written in the same transaction as the rows it covers; shipped_key is that row's
-- idempotency key (a local database restored from a backup reuses ids: the key tells).
CREATE TABLE hosts (
    host_id           text COLLATE "C" PRIMARY KEY,
    instance          text NOT NULL,
    shipped_through   bigint NOT NULL DEFAULT 0,
    shipped_key       text COLLATE "C",        -- idempotency key of the local row at the mark
    rows_shipped      bigint NOT NULL DEFAULT 0,
    log_as_of         text COLLATE "C",        -- newest received_at shipped (canonical UTC)
    watchdog_window_s integer,                 -- the window the host's newest watchdog row records
    first_shipped_at  timestamptz NOT NULL DEFAULT now(),
    last_shipped_at   timestamptz NOT NULL DEFAULT now()
);

-- §3 The log, append-only. (host_id, idempotency_key) is the identity of a row;
-- local_id is the row's events_raw.id on its host.
CREATE TABLE events_raw (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    host_id         text COLLATE "C" NOT NULL REFERENCES hosts (host_id),
    local_id        bigint NOT NULL,
    idempotency_key text COLLATE "C" NOT NULL,
    source          text NOT NULL,
    event_type      text NOT NULL,
    payload         bytea NOT NULL,
    received_at     text COLLATE "C" NOT NULL,
    session_id      text COLLATE "C",
    origin          text COLLATE "C" NOT NULL,
    origin_gen      integer NOT NULL DEFAULT 0,
    origin_offset   bigint,
    UNIQUE (host_id, idempotency_key)
);
CREATE INDEX events_raw_session ON events_raw (session_id, id);
-- lz4 compresses payloads about three times faster than the default pglz (a COPY of 100 MB of
-- transcript lines: 1.8 s against 5.1 s here); a server without lz4 (or before 14) keeps its default.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE events_raw ALTER COLUMN payload SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
    NULL;
END;
$$;

CREATE FUNCTION events_raw_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events_raw is append-only: rows are never %', lower(TG_OP) || 'd';
END;
$$;
CREATE TRIGGER events_raw_no_update BEFORE UPDATE ON events_raw
    FOR EACH ROW EXECUTE FUNCTION events_raw_append_only();
CREATE TRIGGER events_raw_no_delete BEFORE DELETE ON events_raw
    FOR EACH ROW EXECUTE FUNCTION events_raw_append_only();
CREATE TRIGGER events_raw_no_truncate BEFORE TRUNCATE ON events_raw
    FOR EACH STATEMENT EXECUTE FUNCTION events_raw_append_only();

-- §4.1 Sessions: a session id is a UUID, the same session whichever host logged it.
CREATE TABLE sessions (
    id               text COLLATE "C" PRIMARY KEY,
    project_slug     text,
    project_path     text,
    started_at       text COLLATE "C",
    last_activity_at text COLLATE "C",
    status           text NOT NULL DEFAULT 'unknown'
                     CHECK (status IN ('working', 'waiting', 'completed', 'error', 'unknown')),
    git_branch       text,
    cc_version       text,
    title            text,
    slug             text,
    entrypoint       text,
    end_reason       text
);
CREATE INDEX sessions_last_activity ON sessions (last_activity_at);
CREATE INDEX sessions_status ON sessions (status, last_activity_at);

-- Which hosts logged rows of which session (a session resumed on another machine has two).
CREATE TABLE session_hosts (
    session_id text COLLATE "C" NOT NULL,
    host_id    text COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, host_id)
);
CREATE INDEX session_hosts_host ON session_hosts (host_id);

-- §4.2 Agents, identified by (session_id, id): short agent ids clash across sessions.
CREATE TABLE agents (
    session_id      text COLLATE "C" NOT NULL REFERENCES sessions (id) DEFERRABLE INITIALLY DEFERRED,
    id              text COLLATE "C" NOT NULL,
    type            text NOT NULL CHECK (type IN ('main', 'subagent')),
    subagent_type   text,
    status          text NOT NULL CHECK (status IN ('working', 'waiting', 'completed', 'error', 'unknown')),
    evidence_status text CHECK (evidence_status IS NULL OR evidence_status IN
                    ('working', 'waiting', 'completed', 'error', 'unknown')),
    parent_agent_id text COLLATE "C",
    first_seen_at   text COLLATE "C",
    last_seen_at    text COLLATE "C",
    outcome_cause   text CHECK (outcome_cause IS NULL OR outcome_cause IN
                    ('concurrency_limit', 'user_interrupt', 'permission_failed',
                     'dispatch_unavailable', 'terminated_early', 'unclassified')),
    is_compaction   integer NOT NULL DEFAULT 0,
    description     text,
    PRIMARY KEY (session_id, id)
);
CREATE INDEX agents_status ON agents (status, last_seen_at);

-- §4.3 host_id / instance: the machine whose log produced the edge.
CREATE TABLE orchestration_edges (
    id              bigint PRIMARY KEY,
    session_id      text COLLATE "C" NOT NULL,
    parent_agent_id text COLLATE "C" NOT NULL,
    child_agent_id  text COLLATE "C" NOT NULL,
    source          text NOT NULL CHECK (source IN
                    ('tool_use', 'directory', 'task_notification', 'queue_operation', 'legacy_explore')),
    instance        text NOT NULL,
    host_id         text COLLATE "C" NOT NULL,
    created_at      text COLLATE "C",
    tool_use_id     text,
    UNIQUE (session_id, parent_agent_id, child_agent_id),
    UNIQUE (session_id, child_agent_id)
);

-- §4.4 Five rows per billed message; host_id: the smallest host whose log has evidence of it.
CREATE TABLE token_usage (
    id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    host_id                text COLLATE "C" NOT NULL,
    session_id             text COLLATE "C" NOT NULL,
    agent_id               text COLLATE "C",
    message_id             text COLLATE "C" NOT NULL,
    model                  text COLLATE "C" NOT NULL,
    bucket                 text COLLATE "C" NOT NULL CHECK (bucket IN
                           ('input', 'output', 'cache_read', 'cache_write_5m', 'cache_write_1h')),
    tokens                 bigint NOT NULL CHECK (tokens >= 0),
    is_compaction_baseline integer NOT NULL DEFAULT 0,
    occurred_at            text COLLATE "C" NOT NULL,
    claim_rank             integer NOT NULL DEFAULT 0,
    UNIQUE (message_id, bucket)
);
CREATE INDEX token_usage_session ON token_usage (session_id);
CREATE INDEX token_usage_model ON token_usage (model, bucket);

-- §4.5
CREATE TABLE tool_calls (
    session_id  text COLLATE "C" NOT NULL,
    tool_use_id text COLLATE "C" NOT NULL,
    agent_id    text COLLATE "C",
    tool_name   text,
    started_at  text COLLATE "C",
    ended_at    text COLLATE "C",
    status      text NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'denied', 'interrupted')),
    PRIMARY KEY (session_id, tool_use_id)
);

-- §4.6
CREATE TABLE compactions (
    session_id  text COLLATE "C" NOT NULL,
    boundary_id text COLLATE "C" NOT NULL,
    agent_id    text COLLATE "C",
    occurred_at text COLLATE "C",
    trigger     text CHECK (trigger IS NULL OR trigger IN ('auto', 'manual')),
    pre_tokens  bigint,
    PRIMARY KEY (session_id, boundary_id)
);

-- §4.7 raw_event_id is the central events_raw.id (unique across hosts).
CREATE TABLE events (
    raw_event_id bigint PRIMARY KEY,
    host_id      text COLLATE "C" NOT NULL,
    session_id   text COLLATE "C",
    agent_id     text COLLATE "C",
    event_type   text NOT NULL,
    occurred_at  text COLLATE "C" NOT NULL
);
CREATE INDEX events_time ON events (occurred_at, raw_event_id);
CREATE INDEX events_session ON events (session_id);

-- §5.1
CREATE TABLE model_pricing (
    model          text COLLATE "C" NOT NULL,
    bucket         text COLLATE "C" NOT NULL CHECK (bucket IN
                   ('input', 'output', 'cache_read', 'cache_write_5m', 'cache_write_1h')),
    usd_per_mtok   double precision NOT NULL CHECK (usd_per_mtok >= 0),
    effective_from text COLLATE "C" NOT NULL,
    source         text NOT NULL,
    verified_at    text,
    PRIMARY KEY (model, bucket, effective_from)
);

-- §5.4 Time guards: admit a date or a zoned ISO-8601 instant, store it canonically.
CREATE FUNCTION ingestd_canonical(v text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF v IS NULL OR NOT (v ~ '^\d{4}-\d{2}-\d{2}$'
                         OR v ~ '^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$') THEN
        RETURN NULL;
    END IF;
    IF length(v) = 10 THEN
        v := v || 'T00:00:00Z';
    END IF;
    RETURN to_char(v::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
EXCEPTION WHEN others THEN
    RETURN NULL;
END;
$$;

CREATE FUNCTION token_usage_time_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE c text;
BEGIN
    IF NEW.occurred_at ~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$' THEN
        RETURN NEW;
    END IF;
    c := ingestd_canonical(NEW.occurred_at);
    IF c IS NULL THEN
        RAISE EXCEPTION 'token_usage.occurred_at must be a date or a zoned ISO-8601 instant';
    END IF;
    NEW.occurred_at := c;
    RETURN NEW;
END;
$$;
CREATE TRIGGER token_usage_time_guard BEFORE INSERT OR UPDATE OF occurred_at ON token_usage
    FOR EACH ROW EXECUTE FUNCTION token_usage_time_guard();

CREATE FUNCTION model_pricing_time_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE c text;
BEGIN
    IF NEW.effective_from ~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$' THEN
        RETURN NEW;
    END IF;
    c := ingestd_canonical(NEW.effective_from);
    IF c IS NULL THEN
        RAISE EXCEPTION 'model_pricing.effective_from must be a date or a zoned ISO-8601 instant';
    END IF;
    NEW.effective_from := c;
    RETURN NEW;
END;
$$;
CREATE TRIGGER model_pricing_time_guard BEFORE INSERT OR UPDATE OF effective_from ON model_pricing
    FOR EACH ROW EXECUTE FUNCTION model_pricing_time_guard();

-- §5.3 The rollup: tokens per host, session, model, bucket, UTC quarter-hour slot and resolved
-- rate row ('' = unpriced), kept exactly equal to a grouped scan of token_usage by triggers.
CREATE TABLE token_usage_rollup (
    host_id             text COLLATE "C" NOT NULL,
    session_id          text COLLATE "C" NOT NULL,
    model               text COLLATE "C" NOT NULL,
    bucket              text COLLATE "C" NOT NULL,
    slot                text COLLATE "C" NOT NULL,
    rate_effective_from text COLLATE "C" NOT NULL,
    tokens              bigint NOT NULL,
    row_count           bigint NOT NULL,
    PRIMARY KEY (session_id, model, bucket, slot, rate_effective_from, host_id)
);
CREATE INDEX rollup_slot ON token_usage_rollup (slot);
CREATE INDEX rollup_totals ON token_usage_rollup (model, bucket, rate_effective_from, host_id);

CREATE FUNCTION ingestd_slot(at text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT substr(at, 1, 14) || lpad(((substr(at, 15, 2)::integer / 15) * 15)::text, 2, '0') || 'Z'
$$;

CREATE FUNCTION ingestd_rate(m text, b text, at text) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = m AND p.bucket = b AND p.effective_from <= at), '')
$$;

CREATE FUNCTION rollup_add(h text, s text, m text, b text, at text, n bigint, k bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE sl text := ingestd_slot(at);
        r text := ingestd_rate(m, b, at);
BEGIN
    IF k > 0 THEN
        INSERT INTO token_usage_rollup AS x (host_id, session_id, model, bucket, slot, rate_effective_from,
                                             tokens, row_count)
        VALUES (h, s, m, b, sl, r, n, k)
        ON CONFLICT (session_id, model, bucket, slot, rate_effective_from, host_id)
        DO UPDATE SET tokens = x.tokens + EXCLUDED.tokens, row_count = x.row_count + EXCLUDED.row_count;
    ELSE
        UPDATE token_usage_rollup SET tokens = tokens + n, row_count = row_count + k
        WHERE host_id = h AND session_id = s AND model = m AND bucket = b AND slot = sl
          AND rate_effective_from = r;
        DELETE FROM token_usage_rollup
        WHERE host_id = h AND session_id = s AND model = m AND bucket = b AND slot = sl
          AND rate_effective_from = r AND row_count = 0;
    END IF;
END;
$$;

CREATE FUNCTION token_usage_rollup_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM rollup_add(OLD.host_id, OLD.session_id, OLD.model, OLD.bucket, OLD.occurred_at, -OLD.tokens, -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM rollup_add(NEW.host_id, NEW.session_id, NEW.model, NEW.bucket, NEW.occurred_at, NEW.tokens, 1);
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER token_usage_rollup AFTER INSERT OR UPDATE OR DELETE ON token_usage
    FOR EACH ROW EXECUTE FUNCTION token_usage_rollup_trigger();

-- A price row added, changed or removed can move usage to another rate: regroup its
-- (model, bucket) from token_usage. Price changes are rare.
CREATE FUNCTION rollup_regroup(m text, b text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM token_usage_rollup WHERE model = m AND bucket = b;
    INSERT INTO token_usage_rollup (host_id, session_id, model, bucket, slot, rate_effective_from, tokens, row_count)
    SELECT t.host_id, t.session_id, t.model, t.bucket, ingestd_slot(t.occurred_at),
           ingestd_rate(t.model, t.bucket, t.occurred_at), sum(t.tokens), count(*)
    FROM token_usage t WHERE t.model = m AND t.bucket = b
    GROUP BY 1, 2, 3, 4, 5, 6;
END;
$$;

CREATE FUNCTION model_pricing_rollup_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM rollup_regroup(OLD.model, OLD.bucket);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND (TG_OP = 'INSERT' OR NEW.model <> OLD.model OR NEW.bucket <> OLD.bucket) THEN
        PERFORM rollup_regroup(NEW.model, NEW.bucket);
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER model_pricing_rollup AFTER INSERT OR UPDATE OR DELETE ON model_pricing
    FOR EACH ROW EXECUTE FUNCTION model_pricing_rollup_trigger();

-- The central projector's progress: every log row with id <= projected_through is folded.
-- Concurrent projectors serialise on a transaction-scoped advisory lock (ingestd.central.project).
CREATE TABLE projector_progress (
    one                boolean PRIMARY KEY DEFAULT true CHECK (one),
    projected_through  bigint NOT NULL DEFAULT 0,
    projection_revision text
);
INSERT INTO projector_progress (one, projected_through) VALUES (true, 0);

CREATE TABLE meta (
    key   text COLLATE "C" PRIMARY KEY,
    value text
);
