-- 0027: inference geography as a price dimension, and the 4.6 models' long-context premium by date
-- (SPEC §4.4, §5.1, §5.3). Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- token_usage.inference_geo: the message's `usage.inference_geo` ('' for absent, empty, "global"
-- and "not_available", which bill at 1.0; "us" for US-only inference). model_pricing.geo_multipliers:
-- JSON {geo: multiplier} applied to every bucket's rate, like speed_multipliers; a geo the row of a
-- message has no multiplier for leaves that usage unpriced (never priced as global).
--
-- The rollup's key gains inference_geo after speed: the table and the triggers of 0024 are
-- recreated over the longer key (the same rules otherwise) and the rollup regrouped from token_usage.
--
-- Seed (Anthropic's pricing page, platform.claude.com/docs/en/about-claude/pricing):
--   * data residency: "For Claude Opus 4.6 and newer models, specifying US-only inference via the
--     inference_geo parameter incurs a 1.1x multiplier on all token pricing categories": every row
--     of claude-opus-4-6, claude-sonnet-4-6 and claude-opus-4-7 carries {"us": 1.1};
--   * the 4.6 models' 1M-context beta priced prompts over 200K tokens at the long-context rates
--     (Opus 4.6: input 10, output 37.5, cache read 1, 5m write 12.5, 1h write 20; Sonnet 4.6: 6,
--     22.5, 0.6, 7.5, 12): their rows before 2026-03-13 carry that tier;
--   * 1M context went GA on 2026-03-13 at standard pricing (models.dev #1169): rows from that day
--     repeat the rates in force without a tier, so the premium is withdrawn as data, not forgotten.

DROP TRIGGER token_usage_rollup_insert;
DROP TRIGGER token_usage_rollup_update;
DROP TRIGGER token_usage_rollup_delete;
DROP TRIGGER model_pricing_rollup_insert;
DROP TRIGGER model_pricing_rollup_update;
DROP TRIGGER model_pricing_rollup_delete;
DROP TABLE token_usage_rollup;
DELETE FROM rollup_deferred;

ALTER TABLE token_usage ADD COLUMN inference_geo TEXT NOT NULL DEFAULT '';
ALTER TABLE model_pricing ADD COLUMN geo_multipliers TEXT
    CHECK (geo_multipliers IS NULL OR json_type(geo_multipliers) = 'object');

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
    session_id          TEXT NOT NULL,
    model               TEXT NOT NULL,
    slot                TEXT NOT NULL,
    rate_effective_from TEXT NOT NULL,
    tier                INTEGER NOT NULL,
    speed               TEXT NOT NULL,
    inference_geo       TEXT NOT NULL,
    input               INTEGER NOT NULL,
    output              INTEGER NOT NULL,
    cache_read          INTEGER NOT NULL,
    cache_write_5m      INTEGER NOT NULL,
    cache_write_1h      INTEGER NOT NULL,
    row_count           INTEGER NOT NULL,
    web_search_requests INTEGER NOT NULL,
    PRIMARY KEY (session_id, model, slot, rate_effective_from, tier, speed, inference_geo)
) WITHOUT ROWID;
CREATE INDEX rollup_slot ON token_usage_rollup (slot);
CREATE INDEX rollup_totals ON token_usage_rollup (model, rate_effective_from, tier, speed, inference_geo,
    input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests);

INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, inference_geo, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
SELECT t.session_id, t.model,
       substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
       COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = t.model AND p.effective_from <= t.occurred_at), ''),
       CASE WHEN t.prompt_tokens > COALESCE((SELECT min(m.long_context_threshold) FROM model_pricing m WHERE m.model = t.model), t.prompt_tokens)
       THEN
            CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'input' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'input' AND p.effective_from <= t.occurred_at))
                 THEN 1 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'output' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'output' AND p.effective_from <= t.occurred_at))
                 THEN 2 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_read' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_read' AND p.effective_from <= t.occurred_at))
                 THEN 4 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_write_5m' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_write_5m' AND p.effective_from <= t.occurred_at))
                 THEN 8 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_write_1h' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_write_1h' AND p.effective_from <= t.occurred_at))
                 THEN 16 ELSE 0 END
       ELSE 0 END,
       t.speed, t.inference_geo, sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h), count(*), sum(t.web_search_requests)
FROM token_usage t
WHERE t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
GROUP BY 1, 2, 3, 4, 5, 6, 7;

CREATE TRIGGER token_usage_rollup_insert AFTER INSERT ON token_usage
WHEN NEW.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
    AND NOT EXISTS (SELECT 1 FROM rollup_deferred d WHERE d.from_id <= NEW.id)
BEGIN
    INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, inference_geo, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
    SELECT NEW.session_id, NEW.model,
       substr(NEW.occurred_at, 1, 14) || printf('%02d', CAST(substr(NEW.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
       COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = NEW.model AND p.effective_from <= NEW.occurred_at), ''),
       CASE WHEN NEW.prompt_tokens > COALESCE((SELECT min(m.long_context_threshold) FROM model_pricing m WHERE m.model = NEW.model), NEW.prompt_tokens)
       THEN
            CASE WHEN NEW.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = NEW.model AND q.bucket = 'input' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = NEW.model AND p.bucket = 'input' AND p.effective_from <= NEW.occurred_at))
                 THEN 1 ELSE 0 END
            + CASE WHEN NEW.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = NEW.model AND q.bucket = 'output' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = NEW.model AND p.bucket = 'output' AND p.effective_from <= NEW.occurred_at))
                 THEN 2 ELSE 0 END
            + CASE WHEN NEW.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = NEW.model AND q.bucket = 'cache_read' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = NEW.model AND p.bucket = 'cache_read' AND p.effective_from <= NEW.occurred_at))
                 THEN 4 ELSE 0 END
            + CASE WHEN NEW.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = NEW.model AND q.bucket = 'cache_write_5m' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = NEW.model AND p.bucket = 'cache_write_5m' AND p.effective_from <= NEW.occurred_at))
                 THEN 8 ELSE 0 END
            + CASE WHEN NEW.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = NEW.model AND q.bucket = 'cache_write_1h' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = NEW.model AND p.bucket = 'cache_write_1h' AND p.effective_from <= NEW.occurred_at))
                 THEN 16 ELSE 0 END
       ELSE 0 END,
       NEW.speed, NEW.inference_geo, NEW.input, NEW.output, NEW.cache_read, NEW.cache_write_5m, NEW.cache_write_1h, 1, NEW.web_search_requests
    WHERE true
    ON CONFLICT (session_id, model, slot, rate_effective_from, tier, speed, inference_geo)
    DO UPDATE SET input = input + excluded.input, output = output + excluded.output, cache_read = cache_read + excluded.cache_read, cache_write_5m = cache_write_5m + excluded.cache_write_5m, cache_write_1h = cache_write_1h + excluded.cache_write_1h,
        row_count = row_count + excluded.row_count, web_search_requests = web_search_requests + excluded.web_search_requests;
END;

CREATE TRIGGER token_usage_rollup_update AFTER UPDATE OF session_id, model, input, output, cache_read, cache_write_5m, cache_write_1h,
    occurred_at, prompt_tokens, speed, inference_geo, web_search_requests ON token_usage
WHEN NOT EXISTS (SELECT 1 FROM rollup_deferred d WHERE d.from_id <= OLD.id)
BEGIN
    UPDATE token_usage_rollup SET input = input - OLD.input, output = output - OLD.output, cache_read = cache_read - OLD.cache_read, cache_write_5m = cache_write_5m - OLD.cache_write_5m, cache_write_1h = cache_write_1h - OLD.cache_write_1h,
        row_count = row_count - 1, web_search_requests = web_search_requests - OLD.web_search_requests
    WHERE OLD.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', OLD.occurred_at)
      AND session_id = OLD.session_id AND model = OLD.model
      AND slot = substr(OLD.occurred_at, 1, 14) || printf('%02d', CAST(substr(OLD.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z'
      AND rate_effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = OLD.model AND p.effective_from <= OLD.occurred_at), '')
      AND tier = CASE WHEN OLD.prompt_tokens > COALESCE((SELECT min(m.long_context_threshold) FROM model_pricing m WHERE m.model = OLD.model), OLD.prompt_tokens)
       THEN
            CASE WHEN OLD.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = OLD.model AND q.bucket = 'input' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = OLD.model AND p.bucket = 'input' AND p.effective_from <= OLD.occurred_at))
                 THEN 1 ELSE 0 END
            + CASE WHEN OLD.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = OLD.model AND q.bucket = 'output' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = OLD.model AND p.bucket = 'output' AND p.effective_from <= OLD.occurred_at))
                 THEN 2 ELSE 0 END
            + CASE WHEN OLD.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = OLD.model AND q.bucket = 'cache_read' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = OLD.model AND p.bucket = 'cache_read' AND p.effective_from <= OLD.occurred_at))
                 THEN 4 ELSE 0 END
            + CASE WHEN OLD.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = OLD.model AND q.bucket = 'cache_write_5m' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = OLD.model AND p.bucket = 'cache_write_5m' AND p.effective_from <= OLD.occurred_at))
                 THEN 8 ELSE 0 END
            + CASE WHEN OLD.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = OLD.model AND q.bucket = 'cache_write_1h' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = OLD.model AND p.bucket = 'cache_write_1h' AND p.effective_from <= OLD.occurred_at))
                 THEN 16 ELSE 0 END
       ELSE 0 END
      AND speed = OLD.speed AND inference_geo = OLD.inference_geo;
    DELETE FROM token_usage_rollup WHERE row_count = 0 AND session_id = OLD.session_id AND model = OLD.model;
    INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, inference_geo, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
    SELECT NEW.session_id, NEW.model,
       substr(NEW.occurred_at, 1, 14) || printf('%02d', CAST(substr(NEW.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
       COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = NEW.model AND p.effective_from <= NEW.occurred_at), ''),
       CASE WHEN NEW.prompt_tokens > COALESCE((SELECT min(m.long_context_threshold) FROM model_pricing m WHERE m.model = NEW.model), NEW.prompt_tokens)
       THEN
            CASE WHEN NEW.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = NEW.model AND q.bucket = 'input' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = NEW.model AND p.bucket = 'input' AND p.effective_from <= NEW.occurred_at))
                 THEN 1 ELSE 0 END
            + CASE WHEN NEW.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = NEW.model AND q.bucket = 'output' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = NEW.model AND p.bucket = 'output' AND p.effective_from <= NEW.occurred_at))
                 THEN 2 ELSE 0 END
            + CASE WHEN NEW.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = NEW.model AND q.bucket = 'cache_read' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = NEW.model AND p.bucket = 'cache_read' AND p.effective_from <= NEW.occurred_at))
                 THEN 4 ELSE 0 END
            + CASE WHEN NEW.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = NEW.model AND q.bucket = 'cache_write_5m' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = NEW.model AND p.bucket = 'cache_write_5m' AND p.effective_from <= NEW.occurred_at))
                 THEN 8 ELSE 0 END
            + CASE WHEN NEW.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = NEW.model AND q.bucket = 'cache_write_1h' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = NEW.model AND p.bucket = 'cache_write_1h' AND p.effective_from <= NEW.occurred_at))
                 THEN 16 ELSE 0 END
       ELSE 0 END,
       NEW.speed, NEW.inference_geo, NEW.input, NEW.output, NEW.cache_read, NEW.cache_write_5m, NEW.cache_write_1h, 1, NEW.web_search_requests
    WHERE NEW.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
    ON CONFLICT (session_id, model, slot, rate_effective_from, tier, speed, inference_geo)
    DO UPDATE SET input = input + excluded.input, output = output + excluded.output, cache_read = cache_read + excluded.cache_read, cache_write_5m = cache_write_5m + excluded.cache_write_5m, cache_write_1h = cache_write_1h + excluded.cache_write_1h,
        row_count = row_count + excluded.row_count, web_search_requests = web_search_requests + excluded.web_search_requests;
END;

CREATE TRIGGER token_usage_rollup_delete AFTER DELETE ON token_usage
WHEN NOT EXISTS (SELECT 1 FROM rollup_deferred d WHERE d.from_id <= OLD.id)
BEGIN
    UPDATE token_usage_rollup SET input = input - OLD.input, output = output - OLD.output, cache_read = cache_read - OLD.cache_read, cache_write_5m = cache_write_5m - OLD.cache_write_5m, cache_write_1h = cache_write_1h - OLD.cache_write_1h,
        row_count = row_count - 1, web_search_requests = web_search_requests - OLD.web_search_requests
    WHERE OLD.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', OLD.occurred_at)
      AND session_id = OLD.session_id AND model = OLD.model
      AND slot = substr(OLD.occurred_at, 1, 14) || printf('%02d', CAST(substr(OLD.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z'
      AND rate_effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = OLD.model AND p.effective_from <= OLD.occurred_at), '')
      AND tier = CASE WHEN OLD.prompt_tokens > COALESCE((SELECT min(m.long_context_threshold) FROM model_pricing m WHERE m.model = OLD.model), OLD.prompt_tokens)
       THEN
            CASE WHEN OLD.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = OLD.model AND q.bucket = 'input' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = OLD.model AND p.bucket = 'input' AND p.effective_from <= OLD.occurred_at))
                 THEN 1 ELSE 0 END
            + CASE WHEN OLD.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = OLD.model AND q.bucket = 'output' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = OLD.model AND p.bucket = 'output' AND p.effective_from <= OLD.occurred_at))
                 THEN 2 ELSE 0 END
            + CASE WHEN OLD.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = OLD.model AND q.bucket = 'cache_read' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = OLD.model AND p.bucket = 'cache_read' AND p.effective_from <= OLD.occurred_at))
                 THEN 4 ELSE 0 END
            + CASE WHEN OLD.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = OLD.model AND q.bucket = 'cache_write_5m' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = OLD.model AND p.bucket = 'cache_write_5m' AND p.effective_from <= OLD.occurred_at))
                 THEN 8 ELSE 0 END
            + CASE WHEN OLD.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = OLD.model AND q.bucket = 'cache_write_1h' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = OLD.model AND p.bucket = 'cache_write_1h' AND p.effective_from <= OLD.occurred_at))
                 THEN 16 ELSE 0 END
       ELSE 0 END
      AND speed = OLD.speed AND inference_geo = OLD.inference_geo;
    DELETE FROM token_usage_rollup WHERE row_count = 0 AND session_id = OLD.session_id AND model = OLD.model;
END;

-- A price row added, changed or removed can move a model's usage to another rate or tier: regroup
-- that model from token_usage. Price changes are rare.
CREATE TRIGGER model_pricing_rollup_insert AFTER INSERT ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup WHERE model = NEW.model;
    INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, inference_geo, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
    SELECT t.session_id, t.model,
       substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
       COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = t.model AND p.effective_from <= t.occurred_at), ''),
       CASE WHEN t.prompt_tokens > COALESCE((SELECT min(m.long_context_threshold) FROM model_pricing m WHERE m.model = t.model), t.prompt_tokens)
       THEN
            CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'input' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'input' AND p.effective_from <= t.occurred_at))
                 THEN 1 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'output' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'output' AND p.effective_from <= t.occurred_at))
                 THEN 2 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_read' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_read' AND p.effective_from <= t.occurred_at))
                 THEN 4 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_write_5m' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_write_5m' AND p.effective_from <= t.occurred_at))
                 THEN 8 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_write_1h' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_write_1h' AND p.effective_from <= t.occurred_at))
                 THEN 16 ELSE 0 END
       ELSE 0 END,
       t.speed, t.inference_geo, sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h), count(*), sum(t.web_search_requests)
    FROM token_usage t
    WHERE (t.model = NEW.model) AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5, 6, 7;
END;

CREATE TRIGGER model_pricing_rollup_update AFTER UPDATE ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup WHERE model = OLD.model OR model = NEW.model;
    INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, inference_geo, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
    SELECT t.session_id, t.model,
       substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
       COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = t.model AND p.effective_from <= t.occurred_at), ''),
       CASE WHEN t.prompt_tokens > COALESCE((SELECT min(m.long_context_threshold) FROM model_pricing m WHERE m.model = t.model), t.prompt_tokens)
       THEN
            CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'input' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'input' AND p.effective_from <= t.occurred_at))
                 THEN 1 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'output' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'output' AND p.effective_from <= t.occurred_at))
                 THEN 2 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_read' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_read' AND p.effective_from <= t.occurred_at))
                 THEN 4 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_write_5m' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_write_5m' AND p.effective_from <= t.occurred_at))
                 THEN 8 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_write_1h' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_write_1h' AND p.effective_from <= t.occurred_at))
                 THEN 16 ELSE 0 END
       ELSE 0 END,
       t.speed, t.inference_geo, sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h), count(*), sum(t.web_search_requests)
    FROM token_usage t
    WHERE (t.model = OLD.model OR t.model = NEW.model) AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5, 6, 7;
END;

CREATE TRIGGER model_pricing_rollup_delete AFTER DELETE ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup WHERE model = OLD.model;
    INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, inference_geo, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
    SELECT t.session_id, t.model,
       substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
       COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = t.model AND p.effective_from <= t.occurred_at), ''),
       CASE WHEN t.prompt_tokens > COALESCE((SELECT min(m.long_context_threshold) FROM model_pricing m WHERE m.model = t.model), t.prompt_tokens)
       THEN
            CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'input' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'input' AND p.effective_from <= t.occurred_at))
                 THEN 1 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'output' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'output' AND p.effective_from <= t.occurred_at))
                 THEN 2 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_read' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_read' AND p.effective_from <= t.occurred_at))
                 THEN 4 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_write_5m' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_write_5m' AND p.effective_from <= t.occurred_at))
                 THEN 8 ELSE 0 END
            + CASE WHEN t.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q
                 WHERE q.model = t.model AND q.bucket = 'cache_write_1h' AND q.effective_from = (SELECT max(p.effective_from)
                 FROM model_pricing p WHERE p.model = t.model AND p.bucket = 'cache_write_1h' AND p.effective_from <= t.occurred_at))
                 THEN 16 ELSE 0 END
       ELSE 0 END,
       t.speed, t.inference_geo, sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h), count(*), sum(t.web_search_requests)
    FROM token_usage t
    WHERE (t.model = OLD.model) AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5, 6, 7;
END;
