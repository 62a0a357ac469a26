-- pg 0010: one token_usage row per billed message, the five buckets as columns (SQLite 0024).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py PG_PINS.
--
-- token_usage is keyed by message_id, with `input`, `output`, `cache_read`, `cache_write_5m`,
-- `cache_write_1h` beside the message's pricing facts; the rollup keeps the five sums as columns
-- and a message count, keyed by host, session, model, slot, price version (the latest
-- effective_from of any of the model's price rows at or before the message: each bucket's rate is
-- its own latest row at or before it), tier bits (1 input, 2 output, 4 cache_read, 8
-- cache_write_5m, 16 cache_write_1h: the prompt exceeds that bucket's rate row's threshold) and
-- speed, the same key as the local rollup (ingestd.store.rollup). The tables are created empty: the
-- projection revision changes with this layout, so the projector refolds the central log
-- (ingestd.central.project resets projections folded under other rules).

DROP TRIGGER token_usage_rollup ON token_usage;
DROP TRIGGER model_pricing_rollup ON model_pricing;
DROP FUNCTION token_usage_rollup_trigger();
DROP FUNCTION model_pricing_rollup_trigger();
DROP FUNCTION rollup_regroup(text, text);
DROP FUNCTION rollup_add(text, text, text, text, text, bigint, text, bigint, bigint, bigint);
DROP FUNCTION ingestd_tier(text, text, text, bigint);
DROP TABLE token_usage_rollup;
DROP TABLE token_usage;

CREATE TABLE token_usage (
    id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    host_id                text COLLATE "C" NOT NULL,
    session_id             text COLLATE "C" NOT NULL,
    agent_id               text COLLATE "C",
    message_id             text COLLATE "C" NOT NULL UNIQUE,
    model                  text COLLATE "C" NOT NULL,
    input                  bigint NOT NULL DEFAULT 0 CHECK (input >= 0),
    output                 bigint NOT NULL DEFAULT 0 CHECK (output >= 0),
    cache_read             bigint NOT NULL DEFAULT 0 CHECK (cache_read >= 0),
    cache_write_5m         bigint NOT NULL DEFAULT 0 CHECK (cache_write_5m >= 0),
    cache_write_1h         bigint NOT NULL DEFAULT 0 CHECK (cache_write_1h >= 0),
    is_compaction_baseline integer NOT NULL DEFAULT 0,
    occurred_at            text COLLATE "C" NOT NULL,
    claim_rank             integer NOT NULL DEFAULT 0,
    prompt_tokens          bigint NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    speed                  text COLLATE "C" NOT NULL DEFAULT '',
    web_search_requests    bigint NOT NULL DEFAULT 0 CHECK (web_search_requests >= 0)
);
CREATE INDEX token_usage_session ON token_usage (session_id);
CREATE INDEX token_usage_model ON token_usage (model);
CREATE TRIGGER token_usage_time_guard BEFORE INSERT OR UPDATE OF occurred_at ON token_usage
    FOR EACH ROW EXECUTE FUNCTION token_usage_time_guard();

CREATE TABLE token_usage_rollup (
    host_id             text COLLATE "C" NOT NULL,
    session_id          text COLLATE "C" NOT NULL,
    model               text COLLATE "C" NOT NULL,
    slot                text COLLATE "C" NOT NULL,
    rate_effective_from text COLLATE "C" NOT NULL,
    tier                integer NOT NULL,
    speed               text COLLATE "C" NOT NULL,
    input               bigint NOT NULL,
    output              bigint NOT NULL,
    cache_read          bigint NOT NULL,
    cache_write_5m      bigint NOT NULL,
    cache_write_1h      bigint NOT NULL,
    row_count           bigint NOT NULL,
    web_search_requests bigint NOT NULL,
    PRIMARY KEY (session_id, model, slot, rate_effective_from, tier, speed, host_id)
);
CREATE INDEX rollup_slot ON token_usage_rollup (slot);
CREATE INDEX rollup_totals ON token_usage_rollup (model, rate_effective_from, tier, speed, host_id);

-- The price version of a message of model m at `at`: its model's latest effective_from at or before it.
CREATE FUNCTION ingestd_version(m text, at text) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = m AND p.effective_from <= at), '')
$$;

-- The tier bits of a prompt of p tokens of model m at `at`: a bucket's bit when p exceeds the
-- long-context threshold of that bucket's resolved rate row.
CREATE FUNCTION ingestd_tiers(m text, at text, p bigint) RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p > COALESCE((SELECT min(q.long_context_threshold) FROM model_pricing q WHERE q.model = m), p)
           THEN (SELECT COALESCE(sum(CASE WHEN p > q.long_context_threshold THEN
                        CASE q.bucket WHEN 'input' THEN 1 WHEN 'output' THEN 2 WHEN 'cache_read' THEN 4
                                      WHEN 'cache_write_5m' THEN 8 ELSE 16 END
                        ELSE 0 END), 0)::integer
                 FROM model_pricing q
                 WHERE q.model = m AND q.effective_from = ingestd_rate(m, q.bucket, at))
           ELSE 0 END
$$;

CREATE FUNCTION rollup_add(h text, s text, m text, at text, p bigint, sp text,
                           i bigint, o bigint, cr bigint, w5 bigint, w1 bigint, k bigint, w bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE sl text := ingestd_slot(at);
        r text := ingestd_version(m, at);
        t integer := ingestd_tiers(m, at, p);
BEGIN
    IF k > 0 THEN
        INSERT INTO token_usage_rollup AS x (host_id, session_id, model, slot, rate_effective_from, tier, speed,
                                             input, output, cache_read, cache_write_5m, cache_write_1h,
                                             row_count, web_search_requests)
        VALUES (h, s, m, sl, r, t, sp, i, o, cr, w5, w1, k, w)
        ON CONFLICT (session_id, model, slot, rate_effective_from, tier, speed, host_id)
        DO UPDATE SET input = x.input + EXCLUDED.input, output = x.output + EXCLUDED.output,
                      cache_read = x.cache_read + EXCLUDED.cache_read,
                      cache_write_5m = x.cache_write_5m + EXCLUDED.cache_write_5m,
                      cache_write_1h = x.cache_write_1h + EXCLUDED.cache_write_1h,
                      row_count = x.row_count + EXCLUDED.row_count,
                      web_search_requests = x.web_search_requests + EXCLUDED.web_search_requests;
    ELSE
        UPDATE token_usage_rollup SET input = input + i, output = output + o, cache_read = cache_read + cr,
                                      cache_write_5m = cache_write_5m + w5, cache_write_1h = cache_write_1h + w1,
                                      row_count = row_count + k, web_search_requests = web_search_requests + w
        WHERE host_id = h AND session_id = s AND model = m AND slot = sl
          AND rate_effective_from = r AND tier = t AND speed = sp;
        DELETE FROM token_usage_rollup
        WHERE host_id = h AND session_id = s AND model = m AND slot = sl
          AND rate_effective_from = r AND tier = t AND speed = sp AND row_count = 0;
    END IF;
END;
$$;

CREATE FUNCTION token_usage_rollup_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM rollup_add(OLD.host_id, OLD.session_id, OLD.model, OLD.occurred_at, OLD.prompt_tokens, OLD.speed,
                           -OLD.input, -OLD.output, -OLD.cache_read, -OLD.cache_write_5m, -OLD.cache_write_1h,
                           -1, -OLD.web_search_requests);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM rollup_add(NEW.host_id, NEW.session_id, NEW.model, NEW.occurred_at, NEW.prompt_tokens, NEW.speed,
                           NEW.input, NEW.output, NEW.cache_read, NEW.cache_write_5m, NEW.cache_write_1h,
                           1, NEW.web_search_requests);
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER token_usage_rollup AFTER INSERT OR UPDATE OR DELETE ON token_usage
    FOR EACH ROW EXECUTE FUNCTION token_usage_rollup_trigger();

-- A price row added, changed or removed can move a model's usage to another rate or tier: regroup
-- that model from token_usage. Price changes are rare.
CREATE FUNCTION rollup_regroup(m text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM token_usage_rollup WHERE model = m;
    INSERT INTO token_usage_rollup (host_id, session_id, model, slot, rate_effective_from, tier, speed,
                                    input, output, cache_read, cache_write_5m, cache_write_1h,
                                    row_count, web_search_requests)
    SELECT t.host_id, t.session_id, t.model, ingestd_slot(t.occurred_at), ingestd_version(t.model, t.occurred_at),
           ingestd_tiers(t.model, t.occurred_at, t.prompt_tokens), t.speed,
           sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h),
           count(*), sum(t.web_search_requests)
    FROM token_usage t WHERE t.model = m
    GROUP BY 1, 2, 3, 4, 5, 6, 7;
END;
$$;

CREATE FUNCTION model_pricing_rollup_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM rollup_regroup(OLD.model);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND (TG_OP = 'INSERT' OR NEW.model <> OLD.model) THEN
        PERFORM rollup_regroup(NEW.model);
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER model_pricing_rollup AFTER INSERT OR UPDATE OR DELETE ON model_pricing
    FOR EACH ROW EXECUTE FUNCTION model_pricing_rollup_trigger();
