-- 0011: the price model beyond five flat rates (SPEC §5.1, §5.3).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- Per message facts, stored on its token_usage rows (the projector writes them, SPEC §5.1):
--   prompt_tokens: input + cache read + both cache writes (the long-context tier's measure), on all
--     five rows of the message;
--   speed: usage.speed ('' when absent: standard), on all five rows;
--   web_search_requests: usage.server_tool_use.web_search_requests, counted once per message (the
--     maximum over its streamed parts), on its `output` row only (every message has exactly one), so a
--     sum over rows counts each message once.
-- Price rows, as data (all optional, NULL = the row does not have that dimension):
--   long_context_threshold, long_context_usd_per_mtok: a request whose prompt EXCEEDS the threshold
--     is priced at the tier rate for every bucket (each bucket row carries its own tier rate); a
--     prompt of exactly the threshold is standard;
--   speed_multipliers: JSON object {speed: multiplier} applied to every bucket's rate (standard
--     speed is 1 and needs no entry);
--   web_search_usd_per_request: the per-request fee of the web search server tool, read from the
--     `output` row (where the requests are counted). Web fetch has no fee.
-- A dimension a row cannot price (tier with no tier rate, a speed with no multiplier, searches with
-- no fee) leaves that usage unpriced: the cost answer is incomplete, never priced at the standard rate.
--
-- The rollup keeps tokens and the resolved rate row, never dollars; its key gains `tier` (0 or 1:
-- the message's prompt exceeds the threshold of the resolved rate row) and `speed`, and it sums
-- web_search_requests. The triggers of 0002 are replaced by the same ones over the longer key, and
-- the rollup is regrouped from token_usage.
ALTER TABLE token_usage ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0);
ALTER TABLE token_usage ADD COLUMN speed TEXT NOT NULL DEFAULT '';
ALTER TABLE token_usage ADD COLUMN web_search_requests INTEGER NOT NULL DEFAULT 0 CHECK (web_search_requests >= 0);
ALTER TABLE model_pricing ADD COLUMN long_context_threshold INTEGER
    CHECK (long_context_threshold IS NULL OR long_context_threshold >= 0);
ALTER TABLE model_pricing ADD COLUMN long_context_usd_per_mtok REAL
    CHECK (long_context_usd_per_mtok IS NULL OR long_context_usd_per_mtok >= 0);
ALTER TABLE model_pricing ADD COLUMN speed_multipliers TEXT
    CHECK (speed_multipliers IS NULL OR json_type(speed_multipliers) = 'object');
ALTER TABLE model_pricing ADD COLUMN web_search_usd_per_request REAL
    CHECK (web_search_usd_per_request IS NULL OR web_search_usd_per_request >= 0);

DROP TRIGGER token_usage_rollup_insert;
DROP TRIGGER token_usage_rollup_update;
DROP TRIGGER token_usage_rollup_delete;
DROP TRIGGER model_pricing_rollup_insert;
DROP TRIGGER model_pricing_rollup_update;
DROP TRIGGER model_pricing_rollup_delete;
DROP TABLE token_usage_rollup;
CREATE TABLE token_usage_rollup (
    session_id          TEXT NOT NULL,
    model               TEXT NOT NULL,
    bucket              TEXT NOT NULL,
    slot                TEXT NOT NULL,
    rate_effective_from TEXT NOT NULL,
    tier                INTEGER NOT NULL,
    speed               TEXT NOT NULL,
    tokens              INTEGER NOT NULL,
    row_count           INTEGER NOT NULL,
    web_search_requests INTEGER NOT NULL,
    PRIMARY KEY (session_id, model, bucket, slot, rate_effective_from, tier, speed)
) WITHOUT ROWID;
CREATE INDEX rollup_slot ON token_usage_rollup (slot);
CREATE INDEX rollup_totals ON token_usage_rollup
    (model, bucket, rate_effective_from, tier, speed, tokens, row_count, web_search_requests);

CREATE TRIGGER token_usage_rollup_insert AFTER INSERT ON token_usage
WHEN NEW.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
BEGIN
    INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tier, speed, tokens, row_count, web_search_requests)
    SELECT NEW.session_id, NEW.model, NEW.bucket,
           substr(NEW.occurred_at, 1, 14) || printf('%02d', CAST(substr(NEW.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
           COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = NEW.model AND p.bucket = NEW.bucket AND p.effective_from <= NEW.occurred_at), ''),
           COALESCE((SELECT NEW.prompt_tokens > q.long_context_threshold FROM model_pricing q
                      WHERE q.model = NEW.model AND q.bucket = NEW.bucket AND q.effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = NEW.model AND p.bucket = NEW.bucket AND p.effective_from <= NEW.occurred_at), '')), 0),
           NEW.speed, NEW.tokens, 1, NEW.web_search_requests
    WHERE NEW.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
    ON CONFLICT (session_id, model, bucket, slot, rate_effective_from, tier, speed)
    DO UPDATE SET tokens = tokens + excluded.tokens, row_count = row_count + 1,
        web_search_requests = web_search_requests + excluded.web_search_requests;
END;

CREATE TRIGGER token_usage_rollup_update AFTER UPDATE OF session_id, model, bucket, tokens, occurred_at,
    prompt_tokens, speed, web_search_requests ON token_usage
BEGIN
    UPDATE token_usage_rollup SET tokens = tokens - OLD.tokens, row_count = row_count - 1,
        web_search_requests = web_search_requests - OLD.web_search_requests
    WHERE OLD.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', OLD.occurred_at)
      AND session_id = OLD.session_id AND model = OLD.model AND bucket = OLD.bucket
      AND slot = substr(OLD.occurred_at, 1, 14) || printf('%02d', CAST(substr(OLD.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z'
      AND rate_effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = OLD.model AND p.bucket = OLD.bucket AND p.effective_from <= OLD.occurred_at), '')
      AND tier = COALESCE((SELECT OLD.prompt_tokens > q.long_context_threshold FROM model_pricing q
                      WHERE q.model = OLD.model AND q.bucket = OLD.bucket AND q.effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = OLD.model AND p.bucket = OLD.bucket AND p.effective_from <= OLD.occurred_at), '')), 0)
      AND speed = OLD.speed;
    DELETE FROM token_usage_rollup WHERE row_count = 0
      AND session_id = OLD.session_id AND model = OLD.model AND bucket = OLD.bucket;
    INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tier, speed, tokens, row_count, web_search_requests)
    SELECT NEW.session_id, NEW.model, NEW.bucket,
           substr(NEW.occurred_at, 1, 14) || printf('%02d', CAST(substr(NEW.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
           COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = NEW.model AND p.bucket = NEW.bucket AND p.effective_from <= NEW.occurred_at), ''),
           COALESCE((SELECT NEW.prompt_tokens > q.long_context_threshold FROM model_pricing q
                      WHERE q.model = NEW.model AND q.bucket = NEW.bucket AND q.effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = NEW.model AND p.bucket = NEW.bucket AND p.effective_from <= NEW.occurred_at), '')), 0),
           NEW.speed, NEW.tokens, 1, NEW.web_search_requests
    WHERE NEW.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
    ON CONFLICT (session_id, model, bucket, slot, rate_effective_from, tier, speed)
    DO UPDATE SET tokens = tokens + excluded.tokens, row_count = row_count + 1,
        web_search_requests = web_search_requests + excluded.web_search_requests;
END;

CREATE TRIGGER token_usage_rollup_delete AFTER DELETE ON token_usage
BEGIN
    UPDATE token_usage_rollup SET tokens = tokens - OLD.tokens, row_count = row_count - 1,
        web_search_requests = web_search_requests - OLD.web_search_requests
    WHERE OLD.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', OLD.occurred_at)
      AND session_id = OLD.session_id AND model = OLD.model AND bucket = OLD.bucket
      AND slot = substr(OLD.occurred_at, 1, 14) || printf('%02d', CAST(substr(OLD.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z'
      AND rate_effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = OLD.model AND p.bucket = OLD.bucket AND p.effective_from <= OLD.occurred_at), '')
      AND tier = COALESCE((SELECT OLD.prompt_tokens > q.long_context_threshold FROM model_pricing q
                      WHERE q.model = OLD.model AND q.bucket = OLD.bucket AND q.effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = OLD.model AND p.bucket = OLD.bucket AND p.effective_from <= OLD.occurred_at), '')), 0)
      AND speed = OLD.speed;
    DELETE FROM token_usage_rollup WHERE row_count = 0
      AND session_id = OLD.session_id AND model = OLD.model AND bucket = OLD.bucket;
END;

-- A price row added, changed or removed can move usage to another rate or tier: regroup that
-- (model, bucket) from token_usage. Price changes are rare.
CREATE TRIGGER model_pricing_rollup_insert AFTER INSERT ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup WHERE model = NEW.model AND bucket = NEW.bucket;
    INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tier, speed, tokens, row_count, web_search_requests)
    SELECT t.session_id, t.model, t.bucket,
           substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
           COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), ''),
           COALESCE((SELECT t.prompt_tokens > q.long_context_threshold FROM model_pricing q
                      WHERE q.model = t.model AND q.bucket = t.bucket AND q.effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), '')), 0),
           t.speed, sum(t.tokens), count(*), sum(t.web_search_requests)
    FROM token_usage t
    WHERE (t.model = NEW.model AND t.bucket = NEW.bucket)
      AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5, 6, 7;
END;

CREATE TRIGGER model_pricing_rollup_update AFTER UPDATE ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup
    WHERE (model = OLD.model AND bucket = OLD.bucket) OR (model = NEW.model AND bucket = NEW.bucket);
    INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tier, speed, tokens, row_count, web_search_requests)
    SELECT t.session_id, t.model, t.bucket,
           substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
           COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), ''),
           COALESCE((SELECT t.prompt_tokens > q.long_context_threshold FROM model_pricing q
                      WHERE q.model = t.model AND q.bucket = t.bucket AND q.effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), '')), 0),
           t.speed, sum(t.tokens), count(*), sum(t.web_search_requests)
    FROM token_usage t
    WHERE ((t.model = OLD.model AND t.bucket = OLD.bucket) OR (t.model = NEW.model AND t.bucket = NEW.bucket))
      AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5, 6, 7;
END;

CREATE TRIGGER model_pricing_rollup_delete AFTER DELETE ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup WHERE model = OLD.model AND bucket = OLD.bucket;
    INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tier, speed, tokens, row_count, web_search_requests)
    SELECT t.session_id, t.model, t.bucket,
           substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
           COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), ''),
           COALESCE((SELECT t.prompt_tokens > q.long_context_threshold FROM model_pricing q
                      WHERE q.model = t.model AND q.bucket = t.bucket AND q.effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), '')), 0),
           t.speed, sum(t.tokens), count(*), sum(t.web_search_requests)
    FROM token_usage t
    WHERE (t.model = OLD.model AND t.bucket = OLD.bucket)
      AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5, 6, 7;
END;

INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tier, speed, tokens, row_count, web_search_requests)
    SELECT t.session_id, t.model, t.bucket,
           substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
           COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), ''),
           COALESCE((SELECT t.prompt_tokens > q.long_context_threshold FROM model_pricing q
                      WHERE q.model = t.model AND q.bucket = t.bucket AND q.effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), '')), 0),
           t.speed, sum(t.tokens), count(*), sum(t.web_search_requests)
    FROM token_usage t
    WHERE (1)
      AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5, 6, 7;
