-- 0015: a batch writer may roll up the token_usage rows it inserts once per batch (issue 14).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- The rollup triggers of 0011 do per row: resolve the rate, the tier, and upsert one rollup row
-- (with its two indexes). For a batch of thousands of new rows (a backfill) that was most of the
-- cost of writing token_usage. While `rollup_deferred` holds a row, rows whose id is at or past
-- its `from_id` (those inserted since, ids being max(id) + 1) are left out of the per-row
-- triggers; the writer then adds them with ONE grouped INSERT ... SELECT (the same grouping as
-- the scan, ingestd.store.rollup) and empties `rollup_deferred`, in the same transaction
-- (ingestd.store.bulk). Rows before `from_id` keep the per-row triggers, so an update of an
-- older row moves its contribution as before. The rollup stays a function of token_usage and
-- the prices: `verify` and the equivalence tests compare it with the scan.
--
-- A price change while rows are deferred would regroup (0011) rows the final statement then adds
-- again: it is refused. Nothing writes prices inside a batch; the guard makes that a rule.

CREATE TABLE rollup_deferred (
    one     INTEGER PRIMARY KEY CHECK (one = 1),
    from_id INTEGER NOT NULL
);

DROP TRIGGER token_usage_rollup_insert;
DROP TRIGGER token_usage_rollup_update;
DROP TRIGGER token_usage_rollup_delete;

CREATE TRIGGER token_usage_rollup_insert AFTER INSERT ON token_usage
WHEN NEW.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
    AND NOT EXISTS (SELECT 1 FROM rollup_deferred d WHERE d.from_id <= NEW.id)
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
WHEN NOT EXISTS (SELECT 1 FROM rollup_deferred d WHERE d.from_id <= OLD.id)
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
WHEN NOT EXISTS (SELECT 1 FROM rollup_deferred d WHERE d.from_id <= OLD.id)
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

CREATE TRIGGER model_pricing_not_while_deferred_insert BEFORE INSERT ON model_pricing
WHEN EXISTS (SELECT 1 FROM rollup_deferred)
BEGIN
    SELECT RAISE(ABORT, 'model_pricing cannot change while token_usage rows are deferred from the rollup');
END;
CREATE TRIGGER model_pricing_not_while_deferred_update BEFORE UPDATE ON model_pricing
WHEN EXISTS (SELECT 1 FROM rollup_deferred)
BEGIN
    SELECT RAISE(ABORT, 'model_pricing cannot change while token_usage rows are deferred from the rollup');
END;
CREATE TRIGGER model_pricing_not_while_deferred_delete BEFORE DELETE ON model_pricing
WHEN EXISTS (SELECT 1 FROM rollup_deferred)
BEGIN
    SELECT RAISE(ABORT, 'model_pricing cannot change while token_usage rows are deferred from the rollup');
END;
