-- pg 0003: the central store follows the merged local schema (SQLite migrations 0008-0012).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py PG_PINS.
--
-- token_usage gains the per message price facts of SQLite 0011 (prompt_tokens, speed,
-- web_search_requests: searches on the `output` row only); model_pricing gains the price
-- dimensions (long_context_threshold, long_context_usd_per_mtok, speed_multipliers as a JSON
-- object in text, web_search_usd_per_request); the rollup key gains `tier` (0/1: the message's
-- prompt exceeds the threshold of the resolved rate row) and `speed`, and it sums
-- web_search_requests, kept exactly equal to a grouped scan by the triggers below (which replace
-- those of 0001 over the longer key). sessions gains title_source (SQLite 0010); summaries and
-- quarantine are the local tables with the host whose log holds the record added to their key
-- (an origin path and a log id are per host). The seed rows of SQLite 0012 follow, so central
-- cost equals local cost.
ALTER TABLE token_usage ADD COLUMN prompt_tokens bigint NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0);
ALTER TABLE token_usage ADD COLUMN speed text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE token_usage ADD COLUMN web_search_requests bigint NOT NULL DEFAULT 0 CHECK (web_search_requests >= 0);
ALTER TABLE model_pricing ADD COLUMN long_context_threshold bigint
    CHECK (long_context_threshold IS NULL OR long_context_threshold >= 0);
ALTER TABLE model_pricing ADD COLUMN long_context_usd_per_mtok double precision
    CHECK (long_context_usd_per_mtok IS NULL OR long_context_usd_per_mtok >= 0);
ALTER TABLE model_pricing ADD COLUMN speed_multipliers text
    CHECK (speed_multipliers IS NULL OR jsonb_typeof(speed_multipliers::jsonb) = 'object');
ALTER TABLE model_pricing ADD COLUMN web_search_usd_per_request double precision
    CHECK (web_search_usd_per_request IS NULL OR web_search_usd_per_request >= 0);

DROP TRIGGER token_usage_rollup ON token_usage;
DROP TRIGGER model_pricing_rollup ON model_pricing;
DROP FUNCTION token_usage_rollup_trigger();
DROP FUNCTION model_pricing_rollup_trigger();
DROP FUNCTION rollup_regroup(text, text);
DROP FUNCTION rollup_add(text, text, text, text, text, bigint, bigint);
DROP TABLE token_usage_rollup;
CREATE TABLE token_usage_rollup (
    host_id             text COLLATE "C" NOT NULL,
    session_id          text COLLATE "C" NOT NULL,
    model               text COLLATE "C" NOT NULL,
    bucket              text COLLATE "C" NOT NULL,
    slot                text COLLATE "C" NOT NULL,
    rate_effective_from text COLLATE "C" NOT NULL,
    tier                integer NOT NULL,
    speed               text COLLATE "C" NOT NULL,
    tokens              bigint NOT NULL,
    row_count           bigint NOT NULL,
    web_search_requests bigint NOT NULL,
    PRIMARY KEY (session_id, model, bucket, slot, rate_effective_from, tier, speed, host_id)
);
CREATE INDEX rollup_slot ON token_usage_rollup (slot);
CREATE INDEX rollup_totals ON token_usage_rollup (model, bucket, rate_effective_from, tier, speed, host_id);

-- 1 when a prompt of p tokens exceeds the long-context threshold of rate row r of (m, b), else 0
-- (no such row, or a row without a threshold).
CREATE FUNCTION ingestd_tier(m text, b text, r text, p bigint) RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT COALESCE((SELECT (p > q.long_context_threshold)::integer FROM model_pricing q
                     WHERE q.model = m AND q.bucket = b AND q.effective_from = r), 0)
$$;

CREATE FUNCTION rollup_add(h text, s text, m text, b text, at text, p bigint, sp text, n bigint, k bigint, w bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE sl text := ingestd_slot(at);
        r text := ingestd_rate(m, b, at);
        t integer := ingestd_tier(m, b, ingestd_rate(m, b, at), p);
BEGIN
    IF k > 0 THEN
        INSERT INTO token_usage_rollup AS x (host_id, session_id, model, bucket, slot, rate_effective_from, tier, speed,
                                             tokens, row_count, web_search_requests)
        VALUES (h, s, m, b, sl, r, t, sp, n, k, w)
        ON CONFLICT (session_id, model, bucket, slot, rate_effective_from, tier, speed, host_id)
        DO UPDATE SET tokens = x.tokens + EXCLUDED.tokens, row_count = x.row_count + EXCLUDED.row_count,
                      web_search_requests = x.web_search_requests + EXCLUDED.web_search_requests;
    ELSE
        UPDATE token_usage_rollup SET tokens = tokens + n, row_count = row_count + k,
                                      web_search_requests = web_search_requests + w
        WHERE host_id = h AND session_id = s AND model = m AND bucket = b AND slot = sl
          AND rate_effective_from = r AND tier = t AND speed = sp;
        DELETE FROM token_usage_rollup
        WHERE host_id = h AND session_id = s AND model = m AND bucket = b AND slot = sl
          AND rate_effective_from = r AND tier = t AND speed = sp AND row_count = 0;
    END IF;
END;
$$;

CREATE FUNCTION token_usage_rollup_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM rollup_add(OLD.host_id, OLD.session_id, OLD.model, OLD.bucket, OLD.occurred_at, OLD.prompt_tokens,
                           OLD.speed, -OLD.tokens, -1, -OLD.web_search_requests);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM rollup_add(NEW.host_id, NEW.session_id, NEW.model, NEW.bucket, NEW.occurred_at, NEW.prompt_tokens,
                           NEW.speed, NEW.tokens, 1, NEW.web_search_requests);
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER token_usage_rollup AFTER INSERT OR UPDATE OR DELETE ON token_usage
    FOR EACH ROW EXECUTE FUNCTION token_usage_rollup_trigger();

-- A price row added, changed or removed can move usage to another rate or tier: regroup its
-- (model, bucket) from token_usage. Price changes are rare.
CREATE FUNCTION rollup_regroup(m text, b text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM token_usage_rollup WHERE model = m AND bucket = b;
    INSERT INTO token_usage_rollup (host_id, session_id, model, bucket, slot, rate_effective_from, tier, speed,
                                    tokens, row_count, web_search_requests)
    SELECT t.host_id, t.session_id, t.model, t.bucket, ingestd_slot(t.occurred_at),
           ingestd_rate(t.model, t.bucket, t.occurred_at),
           ingestd_tier(t.model, t.bucket, ingestd_rate(t.model, t.bucket, t.occurred_at), t.prompt_tokens),
           t.speed, sum(t.tokens), count(*), sum(t.web_search_requests)
    FROM token_usage t WHERE t.model = m AND t.bucket = b
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
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

-- The rollup of the existing rows, over the new key.
INSERT INTO token_usage_rollup (host_id, session_id, model, bucket, slot, rate_effective_from, tier, speed,
                                tokens, row_count, web_search_requests)
SELECT t.host_id, t.session_id, t.model, t.bucket, ingestd_slot(t.occurred_at),
       ingestd_rate(t.model, t.bucket, t.occurred_at),
       ingestd_tier(t.model, t.bucket, ingestd_rate(t.model, t.bucket, t.occurred_at), t.prompt_tokens),
       t.speed, sum(t.tokens), count(*), sum(t.web_search_requests)
FROM token_usage t GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;

-- SQLite 0010: which kind of record gave sessions.title; NULL with no title.
ALTER TABLE sessions ADD COLUMN title_source text
    CHECK (title_source IS NULL OR title_source IN ('custom-title', 'session_title', 'ai-title', 'summary'));

-- SQLite 0010: `summary` records, joined to the session of their leaf record in the same file of
-- the same host (ingestd.central.project, as ingestd.store.titles does locally).
CREATE TABLE summaries (
    host_id       text COLLATE "C" NOT NULL,
    origin        text COLLATE "C" NOT NULL,
    origin_gen    integer NOT NULL,
    origin_offset bigint NOT NULL,
    file_session  text COLLATE "C" NOT NULL,
    leaf_uuid     text COLLATE "C" NOT NULL,
    summary       text NOT NULL,
    leaf_session  text COLLATE "C",
    leaf_at       text COLLATE "C",
    PRIMARY KEY (host_id, origin, origin_gen, origin_offset)
);
CREATE INDEX summaries_leaf_session ON summaries (leaf_session, leaf_at);
-- The leaf lookup reads the rows of one file of one host.
CREATE INDEX events_raw_origin ON events_raw (host_id, origin);

-- SQLite 0008: the records the projector did not project whole; raw_event_id is the central id.
CREATE TABLE quarantine (
    raw_event_id  bigint NOT NULL,
    reason        text NOT NULL CHECK (reason IN ('timestamp', 'tokens', 'storage')),
    host_id       text COLLATE "C" NOT NULL,
    session_id    text COLLATE "C",
    origin        text NOT NULL,
    origin_offset bigint,
    detail        text NOT NULL,
    PRIMARY KEY (raw_event_id, reason)
);
CREATE INDEX quarantine_reason ON quarantine (reason, raw_event_id);

-- The seed of SQLite 0012 (the same rows, the same sources).
INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source, verified_at,
                           long_context_threshold, long_context_usd_per_mtok, speed_multipliers,
                           web_search_usd_per_request) VALUES
    ('claude-3-5-haiku-20241022', 'output', 4, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-3-5-sonnet-20241022', 'output', 15, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-3-7-sonnet-20250219', 'output', 15, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-haiku-4-5-20251001', 'output', 5, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-opus-4-1-20250805', 'output', 75, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-opus-4-20250514', 'output', 75, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-opus-4-5-20251101', 'output', 25, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-opus-4-6', 'output', 25, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-opus-4-7', 'output', 25, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-sonnet-4-20250514', 'output', 15, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-sonnet-4-5-20250929', 'output', 15, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-sonnet-4-6', 'output', 15, '2025-05-07T00:00:00.000Z', 'anthropic web search tool: $10 per 1,000 searches (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, NULL, 0.01),
    ('claude-sonnet-4-20250514', 'input', 3, '2025-08-12T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 6, NULL, NULL),
    ('claude-sonnet-4-20250514', 'output', 15, '2025-08-12T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 22.5, NULL, 0.01),
    ('claude-sonnet-4-20250514', 'cache_read', 0.3, '2025-08-12T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 0.6, NULL, NULL),
    ('claude-sonnet-4-20250514', 'cache_write_5m', 3.75, '2025-08-12T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 7.5, NULL, NULL),
    ('claude-sonnet-4-20250514', 'cache_write_1h', 6, '2025-08-12T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 12, NULL, NULL),
    ('claude-sonnet-4-5-20250929', 'input', 3, '2025-09-29T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 6, NULL, NULL),
    ('claude-sonnet-4-5-20250929', 'output', 15, '2025-09-29T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 22.5, NULL, 0.01),
    ('claude-sonnet-4-5-20250929', 'cache_read', 0.3, '2025-09-29T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 0.6, NULL, NULL),
    ('claude-sonnet-4-5-20250929', 'cache_write_5m', 3.75, '2025-09-29T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 7.5, NULL, NULL),
    ('claude-sonnet-4-5-20250929', 'cache_write_1h', 6, '2025-09-29T00:00:00.000Z', 'anthropic long context pricing, prompts over 200K tokens (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', 200000, 12, NULL, NULL),
    ('claude-opus-4-6', 'input', 5, '2026-02-05T00:00:00.000Z', 'anthropic fast mode for Opus 4.6: 6x standard rates (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, '{"fast": 6}', NULL),
    ('claude-opus-4-6', 'output', 25, '2026-02-05T00:00:00.000Z', 'anthropic fast mode for Opus 4.6: 6x standard rates (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, '{"fast": 6}', 0.01),
    ('claude-opus-4-6', 'cache_read', 0.5, '2026-02-05T00:00:00.000Z', 'anthropic fast mode for Opus 4.6: 6x standard rates (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, '{"fast": 6}', NULL),
    ('claude-opus-4-6', 'cache_write_5m', 6.25, '2026-02-05T00:00:00.000Z', 'anthropic fast mode for Opus 4.6: 6x standard rates (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, '{"fast": 6}', NULL),
    ('claude-opus-4-6', 'cache_write_1h', 10, '2026-02-05T00:00:00.000Z', 'anthropic fast mode for Opus 4.6: 6x standard rates (platform.claude.com/docs/en/about-claude/pricing)', '2026-11-30T00:00:00.000Z', NULL, NULL, '{"fast": 6}', NULL);
