-- pg 0013: inference geography as a price dimension, and the 4.6 models' long-context premium by
-- date (SQLite 0027). Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py PG_PINS.
--
-- token_usage.inference_geo ('' for absent, empty, "global", "not_available"; "us" for US-only
-- inference), model_pricing.geo_multipliers (JSON {geo: multiplier}, every bucket's rate, like
-- speed_multipliers), and the rollup keyed also by inference_geo after speed: the same key as the
-- local rollup (ingestd.store.rollup). The seed rows follow SQLite 0027 (the same rows, the same
-- sources). The tables are regrouped from token_usage; the projection revision changes with this
-- layout, so the projector refolds the central log.

DROP TRIGGER token_usage_rollup ON token_usage;
DROP TRIGGER model_pricing_rollup ON model_pricing;
DROP FUNCTION token_usage_rollup_trigger();
DROP FUNCTION model_pricing_rollup_trigger();
DROP FUNCTION rollup_regroup(text);
DROP FUNCTION rollup_add(text, text, text, text, bigint, text, bigint, bigint, bigint, bigint, bigint, bigint, bigint);
DROP TABLE token_usage_rollup;

ALTER TABLE token_usage ADD COLUMN inference_geo text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE model_pricing ADD COLUMN geo_multipliers text
    CHECK (geo_multipliers IS NULL OR jsonb_typeof(geo_multipliers::jsonb) = 'object');

UPDATE model_pricing SET geo_multipliers = '{"us": 1.1}',
    source = source || '; US-only inference 1.1x (platform.claude.com/docs/en/about-claude/pricing, data residency)'
WHERE model IN ('claude-opus-4-6', 'claude-sonnet-4-6', 'claude-opus-4-7');

UPDATE model_pricing SET long_context_threshold = 200000,
    long_context_usd_per_mtok = CASE bucket WHEN 'input' THEN 10 WHEN 'output' THEN 37.5 WHEN 'cache_read' THEN 1
                                            WHEN 'cache_write_5m' THEN 12.5 ELSE 20 END,
    source = source || '; prompts over 200K tokens at the long-context rates until 1M context GA'
WHERE model = 'claude-opus-4-6' AND effective_from < '2026-03-13T00:00:00.000Z';
UPDATE model_pricing SET long_context_threshold = 200000,
    long_context_usd_per_mtok = CASE bucket WHEN 'input' THEN 6 WHEN 'output' THEN 22.5 WHEN 'cache_read' THEN 0.6
                                            WHEN 'cache_write_5m' THEN 7.5 ELSE 12 END,
    source = source || '; prompts over 200K tokens at the long-context rates until 1M context GA'
WHERE model = 'claude-sonnet-4-6' AND effective_from < '2026-03-13T00:00:00.000Z';

INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source, verified_at, long_context_threshold,
    long_context_usd_per_mtok, speed_multipliers, web_search_usd_per_request, geo_multipliers)
SELECT p.model, p.bucket, p.usd_per_mtok, '2026-03-13T00:00:00.000Z',
       '1M context GA at standard pricing: no long-context premium from 2026-03-13 (models.dev #1169;'
       || ' platform.claude.com/docs/en/about-claude/pricing)',
       '2026-12-02T00:00:00.000Z', NULL, NULL, p.speed_multipliers, p.web_search_usd_per_request, p.geo_multipliers
FROM model_pricing p
WHERE p.model IN ('claude-opus-4-6', 'claude-sonnet-4-6')
  AND p.effective_from = (SELECT max(q.effective_from) FROM model_pricing q
                          WHERE q.model = p.model AND q.bucket = p.bucket AND q.effective_from < '2026-03-13T00:00:00.000Z');

CREATE TABLE token_usage_rollup (
    host_id             text COLLATE "C" NOT NULL,
    session_id          text COLLATE "C" NOT NULL,
    model               text COLLATE "C" NOT NULL,
    slot                text COLLATE "C" NOT NULL,
    rate_effective_from text COLLATE "C" NOT NULL,
    tier                integer NOT NULL,
    speed               text COLLATE "C" NOT NULL,
    inference_geo       text COLLATE "C" NOT NULL,
    input               bigint NOT NULL,
    output              bigint NOT NULL,
    cache_read          bigint NOT NULL,
    cache_write_5m      bigint NOT NULL,
    cache_write_1h      bigint NOT NULL,
    row_count           bigint NOT NULL,
    web_search_requests bigint NOT NULL,
    PRIMARY KEY (session_id, model, slot, rate_effective_from, tier, speed, inference_geo, host_id)
);
CREATE INDEX rollup_slot ON token_usage_rollup (slot);
CREATE INDEX rollup_totals ON token_usage_rollup (model, rate_effective_from, tier, speed, inference_geo, host_id);

CREATE FUNCTION rollup_add(h text, s text, m text, at text, p bigint, sp text, g text,
                           i bigint, o bigint, cr bigint, w5 bigint, w1 bigint, k bigint, w bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE sl text := ingestd_slot(at);
        r text := ingestd_version(m, at);
        t integer := ingestd_tiers(m, at, p);
BEGIN
    IF k > 0 THEN
        INSERT INTO token_usage_rollup AS x (host_id, session_id, model, slot, rate_effective_from, tier, speed,
                                             inference_geo, input, output, cache_read, cache_write_5m,
                                             cache_write_1h, row_count, web_search_requests)
        VALUES (h, s, m, sl, r, t, sp, g, i, o, cr, w5, w1, k, w)
        ON CONFLICT (session_id, model, slot, rate_effective_from, tier, speed, inference_geo, host_id)
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
          AND rate_effective_from = r AND tier = t AND speed = sp AND inference_geo = g;
        DELETE FROM token_usage_rollup
        WHERE host_id = h AND session_id = s AND model = m AND slot = sl
          AND rate_effective_from = r AND tier = t AND speed = sp AND inference_geo = g AND row_count = 0;
    END IF;
END;
$$;

CREATE FUNCTION token_usage_rollup_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM rollup_add(OLD.host_id, OLD.session_id, OLD.model, OLD.occurred_at, OLD.prompt_tokens, OLD.speed,
                           OLD.inference_geo, -OLD.input, -OLD.output, -OLD.cache_read, -OLD.cache_write_5m,
                           -OLD.cache_write_1h, -1, -OLD.web_search_requests);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM rollup_add(NEW.host_id, NEW.session_id, NEW.model, NEW.occurred_at, NEW.prompt_tokens, NEW.speed,
                           NEW.inference_geo, NEW.input, NEW.output, NEW.cache_read, NEW.cache_write_5m,
                           NEW.cache_write_1h, 1, NEW.web_search_requests);
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
    INSERT INTO token_usage_rollup (host_id, session_id, model, slot, rate_effective_from, tier, speed, inference_geo,
                                    input, output, cache_read, cache_write_5m, cache_write_1h,
                                    row_count, web_search_requests)
    SELECT t.host_id, t.session_id, t.model, ingestd_slot(t.occurred_at), ingestd_version(t.model, t.occurred_at),
           ingestd_tiers(t.model, t.occurred_at, t.prompt_tokens), t.speed, t.inference_geo,
           sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h),
           count(*), sum(t.web_search_requests)
    FROM token_usage t WHERE t.model = m
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
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

INSERT INTO token_usage_rollup (host_id, session_id, model, slot, rate_effective_from, tier, speed, inference_geo,
                                input, output, cache_read, cache_write_5m, cache_write_1h, row_count,
                                web_search_requests)
SELECT t.host_id, t.session_id, t.model, ingestd_slot(t.occurred_at), ingestd_version(t.model, t.occurred_at),
       ingestd_tiers(t.model, t.occurred_at, t.prompt_tokens), t.speed, t.inference_geo,
       sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h),
       count(*), sum(t.web_search_requests)
FROM token_usage t
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
