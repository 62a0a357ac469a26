-- 0024: one token_usage row per billed message, the five buckets as columns (SPEC §4.4, §5.3).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- token_usage held five rows per message (one per bucket), each repeating the message's session,
-- agent, model, time and pricing facts, with three indexes each: most of the cost of writing it
-- and a fifth of the database. A message is now one row: `input`, `output`, `cache_read`,
-- `cache_write_5m`, `cache_write_1h` (zeros included) beside the pricing facts of 0011
-- (prompt_tokens, speed, web_search_requests, now once per message), keyed by message_id.
--
-- The rollup keeps the five bucket sums as columns and a message count (row_count). Its key:
--   slot: the UTC quarter-hour, as before;
--   rate_effective_from: the message's price version, the latest effective_from of ANY of its
--     model's price rows at or before occurred_at ('' when the model has none). A bucket's rate is
--     its own latest row at or before that version, which is exactly its latest row at or before
--     occurred_at (no row of the model lies between the version and occurred_at);
--   tier: a bit per bucket (1 input, 2 output, 4 cache_read, 8 cache_write_5m, 16 cache_write_1h),
--     set when the message's prompt exceeds the long-context threshold of that bucket's resolved
--     rate row (a prompt of exactly the threshold is standard); the rows' thresholds are checked
--     only when the prompt exceeds the smallest threshold the model has;
--   speed, as before.
-- The triggers of 0015 (with its deferral for batch writes) and 0018 (time canonicalisation) are
-- recreated over the new table; a price change regroups its model (all five buckets).
--
-- The existing rows are carried over, one row per message (its five bucket rows summed by bucket,
-- in arrival order), and the rollup regrouped from them, so nothing is lost and every reader sees
-- the same figures at once. The projection revision changes with this layout too: the writer that
-- applies this migration then re-projects every projection from the log (the log is the truth;
-- prune receipts are re-applied, so nothing pruned comes back).

DROP TRIGGER token_usage_rollup_insert;
DROP TRIGGER token_usage_rollup_update;
DROP TRIGGER token_usage_rollup_delete;
DROP TRIGGER model_pricing_rollup_insert;
DROP TRIGGER model_pricing_rollup_update;
DROP TRIGGER model_pricing_rollup_delete;
DROP TRIGGER token_usage_time_insert;
DROP TRIGGER token_usage_time_update;
DROP TABLE token_usage_rollup;
DROP INDEX token_usage_session;
DROP INDEX token_usage_time;
DELETE FROM rollup_deferred;
ALTER TABLE token_usage RENAME TO token_usage_by_bucket;

CREATE TABLE token_usage (
    id                     INTEGER PRIMARY KEY,
    session_id             TEXT NOT NULL,
    agent_id               TEXT,
    message_id             TEXT NOT NULL UNIQUE,
    model                  TEXT NOT NULL,
    input                  INTEGER NOT NULL DEFAULT 0 CHECK (input >= 0),
    output                 INTEGER NOT NULL DEFAULT 0 CHECK (output >= 0),
    cache_read             INTEGER NOT NULL DEFAULT 0 CHECK (cache_read >= 0),
    cache_write_5m         INTEGER NOT NULL DEFAULT 0 CHECK (cache_write_5m >= 0),
    cache_write_1h         INTEGER NOT NULL DEFAULT 0 CHECK (cache_write_1h >= 0),
    is_compaction_baseline INTEGER NOT NULL DEFAULT 0,
    occurred_at            TEXT NOT NULL,
    claim_rank             INTEGER NOT NULL DEFAULT 0, -- precedence of the evidence (§4.4)
    prompt_tokens          INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    speed                  TEXT NOT NULL DEFAULT '',
    web_search_requests    INTEGER NOT NULL DEFAULT 0 CHECK (web_search_requests >= 0)
);

-- Every row of one message carries the same session, agent, model, time, claim and pricing facts
-- (the projector writes them together); searches sit on its output row only.
INSERT INTO token_usage (session_id, agent_id, message_id, model, input, output, cache_read,
    cache_write_5m, cache_write_1h, is_compaction_baseline, occurred_at, claim_rank, prompt_tokens,
    speed, web_search_requests)
SELECT session_id, agent_id, message_id, model,
       sum(CASE WHEN bucket = 'input' THEN tokens ELSE 0 END),
       sum(CASE WHEN bucket = 'output' THEN tokens ELSE 0 END),
       sum(CASE WHEN bucket = 'cache_read' THEN tokens ELSE 0 END),
       sum(CASE WHEN bucket = 'cache_write_5m' THEN tokens ELSE 0 END),
       sum(CASE WHEN bucket = 'cache_write_1h' THEN tokens ELSE 0 END),
       max(is_compaction_baseline), min(occurred_at), max(claim_rank), max(prompt_tokens), max(speed),
       sum(web_search_requests)
FROM token_usage_by_bucket
GROUP BY message_id
ORDER BY min(id);
DROP TABLE token_usage_by_bucket;
CREATE INDEX token_usage_session ON token_usage (session_id);
CREATE INDEX token_usage_time ON token_usage (occurred_at, id);

CREATE TABLE token_usage_rollup (
    session_id          TEXT NOT NULL,
    model               TEXT NOT NULL,
    slot                TEXT NOT NULL,
    rate_effective_from TEXT NOT NULL,
    tier                INTEGER NOT NULL,
    speed               TEXT NOT NULL,
    input               INTEGER NOT NULL,
    output              INTEGER NOT NULL,
    cache_read          INTEGER NOT NULL,
    cache_write_5m      INTEGER NOT NULL,
    cache_write_1h      INTEGER NOT NULL,
    row_count           INTEGER NOT NULL,
    web_search_requests INTEGER NOT NULL,
    PRIMARY KEY (session_id, model, slot, rate_effective_from, tier, speed)
) WITHOUT ROWID;
CREATE INDEX rollup_slot ON token_usage_rollup (slot);
CREATE INDEX rollup_totals ON token_usage_rollup (model, rate_effective_from, tier, speed,
    input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests);

INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
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
       t.speed, sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h), count(*), sum(t.web_search_requests)
FROM token_usage t
WHERE t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
GROUP BY 1, 2, 3, 4, 5, 6;

CREATE TRIGGER token_usage_time_insert AFTER INSERT ON token_usage
WHEN NEW.occurred_at IS NOT strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
BEGIN
    SELECT RAISE(ABORT, 'token_usage.occurred_at must be a date or a zoned ISO-8601 instant')
    WHERE NOT (typeof(NEW.occurred_at) = 'text'
          AND NEW.occurred_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
          AND date(substr(NEW.occurred_at, 1, 10)) IS substr(NEW.occurred_at, 1, 10)
          AND strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at) IS NOT NULL
          AND (length(NEW.occurred_at) = 10 OR NEW.occurred_at GLOB '*Z'
               OR NEW.occurred_at GLOB '*[+-][0-9][0-9]:[0-9][0-9]'));
    UPDATE token_usage SET occurred_at = strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at) WHERE id = NEW.id;
END;

CREATE TRIGGER token_usage_time_update AFTER UPDATE OF occurred_at ON token_usage
WHEN NEW.occurred_at IS NOT strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
BEGIN
    SELECT RAISE(ABORT, 'token_usage.occurred_at must be a date or a zoned ISO-8601 instant')
    WHERE NOT (typeof(NEW.occurred_at) = 'text'
          AND NEW.occurred_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
          AND date(substr(NEW.occurred_at, 1, 10)) IS substr(NEW.occurred_at, 1, 10)
          AND strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at) IS NOT NULL
          AND (length(NEW.occurred_at) = 10 OR NEW.occurred_at GLOB '*Z'
               OR NEW.occurred_at GLOB '*[+-][0-9][0-9]:[0-9][0-9]'));
    UPDATE token_usage SET occurred_at = strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at) WHERE id = NEW.id;
END;

CREATE TRIGGER token_usage_rollup_insert AFTER INSERT ON token_usage
WHEN NEW.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
    AND NOT EXISTS (SELECT 1 FROM rollup_deferred d WHERE d.from_id <= NEW.id)
BEGIN
    INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
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
       NEW.speed, NEW.input, NEW.output, NEW.cache_read, NEW.cache_write_5m, NEW.cache_write_1h, 1, NEW.web_search_requests
    WHERE true
    ON CONFLICT (session_id, model, slot, rate_effective_from, tier, speed)
    DO UPDATE SET input = input + excluded.input, output = output + excluded.output, cache_read = cache_read + excluded.cache_read, cache_write_5m = cache_write_5m + excluded.cache_write_5m, cache_write_1h = cache_write_1h + excluded.cache_write_1h,
        row_count = row_count + excluded.row_count, web_search_requests = web_search_requests + excluded.web_search_requests;
END;

CREATE TRIGGER token_usage_rollup_update AFTER UPDATE OF session_id, model, input, output, cache_read, cache_write_5m, cache_write_1h,
    occurred_at, prompt_tokens, speed, web_search_requests ON token_usage
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
      AND speed = OLD.speed;
    DELETE FROM token_usage_rollup WHERE row_count = 0 AND session_id = OLD.session_id AND model = OLD.model;
    INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
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
       NEW.speed, NEW.input, NEW.output, NEW.cache_read, NEW.cache_write_5m, NEW.cache_write_1h, 1, NEW.web_search_requests
    WHERE NEW.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
    ON CONFLICT (session_id, model, slot, rate_effective_from, tier, speed)
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
      AND speed = OLD.speed;
    DELETE FROM token_usage_rollup WHERE row_count = 0 AND session_id = OLD.session_id AND model = OLD.model;
END;

-- A price row added, changed or removed can move a model's usage to another rate or tier: regroup
-- that model from token_usage. Price changes are rare.
CREATE TRIGGER model_pricing_rollup_insert AFTER INSERT ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup WHERE model = NEW.model;
    INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
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
       t.speed, sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h), count(*), sum(t.web_search_requests)
    FROM token_usage t
    WHERE (t.model = NEW.model) AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5, 6;
END;

CREATE TRIGGER model_pricing_rollup_update AFTER UPDATE ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup WHERE model = OLD.model OR model = NEW.model;
    INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
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
       t.speed, sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h), count(*), sum(t.web_search_requests)
    FROM token_usage t
    WHERE (t.model = OLD.model OR t.model = NEW.model) AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5, 6;
END;

CREATE TRIGGER model_pricing_rollup_delete AFTER DELETE ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup WHERE model = OLD.model;
    INSERT INTO token_usage_rollup (session_id, model, slot, rate_effective_from, tier, speed, input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)
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
       t.speed, sum(t.input), sum(t.output), sum(t.cache_read), sum(t.cache_write_5m), sum(t.cache_write_1h), count(*), sum(t.web_search_requests)
    FROM token_usage t
    WHERE (t.model = OLD.model) AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5, 6;
END;
