-- 0002: canonical UTC time guards (SPEC §5.4) and the exact cost rollup (SPEC §5.3).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- Canonical spelling: YYYY-MM-DDTHH:MM:SS.sssZ, i.e. strftime('%Y-%m-%dT%H:%M:%fZ', x).
-- Admitted: a bare date (YYYY-MM-DD) or a date-time with 'Z' or a +HH:MM / -HH:MM offset.
-- Rejected: anything else, naive date-times included (they name no instant).

CREATE TRIGGER token_usage_time_guard_insert BEFORE INSERT ON token_usage
WHEN NOT (typeof(NEW.occurred_at) = 'text'
          AND NEW.occurred_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
          AND date(substr(NEW.occurred_at, 1, 10)) IS substr(NEW.occurred_at, 1, 10)
          AND strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at) IS NOT NULL
          AND (length(NEW.occurred_at) = 10 OR NEW.occurred_at GLOB '*Z'
               OR NEW.occurred_at GLOB '*[+-][0-9][0-9]:[0-9][0-9]'))
BEGIN
    SELECT RAISE(ABORT, 'token_usage.occurred_at must be a date or a zoned ISO-8601 instant');
END;
CREATE TRIGGER token_usage_time_guard_update BEFORE UPDATE OF occurred_at ON token_usage
WHEN NOT (typeof(NEW.occurred_at) = 'text'
          AND NEW.occurred_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
          AND date(substr(NEW.occurred_at, 1, 10)) IS substr(NEW.occurred_at, 1, 10)
          AND strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at) IS NOT NULL
          AND (length(NEW.occurred_at) = 10 OR NEW.occurred_at GLOB '*Z'
               OR NEW.occurred_at GLOB '*[+-][0-9][0-9]:[0-9][0-9]'))
BEGIN
    SELECT RAISE(ABORT, 'token_usage.occurred_at must be a date or a zoned ISO-8601 instant');
END;
CREATE TRIGGER token_usage_time_canon_insert AFTER INSERT ON token_usage
WHEN NEW.occurred_at IS NOT strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
BEGIN
    UPDATE token_usage SET occurred_at = strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at) WHERE id = NEW.id;
END;
CREATE TRIGGER token_usage_time_canon_update AFTER UPDATE OF occurred_at ON token_usage
WHEN NEW.occurred_at IS NOT strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
BEGIN
    UPDATE token_usage SET occurred_at = strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at) WHERE id = NEW.id;
END;

CREATE TRIGGER model_pricing_time_guard_insert BEFORE INSERT ON model_pricing
WHEN NOT (typeof(NEW.effective_from) = 'text'
          AND NEW.effective_from GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
          AND date(substr(NEW.effective_from, 1, 10)) IS substr(NEW.effective_from, 1, 10)
          AND strftime('%Y-%m-%dT%H:%M:%fZ', NEW.effective_from) IS NOT NULL
          AND (length(NEW.effective_from) = 10 OR NEW.effective_from GLOB '*Z'
               OR NEW.effective_from GLOB '*[+-][0-9][0-9]:[0-9][0-9]'))
BEGIN
    SELECT RAISE(ABORT, 'model_pricing.effective_from must be a date or a zoned ISO-8601 instant');
END;
CREATE TRIGGER model_pricing_time_guard_update BEFORE UPDATE OF effective_from ON model_pricing
WHEN NOT (typeof(NEW.effective_from) = 'text'
          AND NEW.effective_from GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*'
          AND date(substr(NEW.effective_from, 1, 10)) IS substr(NEW.effective_from, 1, 10)
          AND strftime('%Y-%m-%dT%H:%M:%fZ', NEW.effective_from) IS NOT NULL
          AND (length(NEW.effective_from) = 10 OR NEW.effective_from GLOB '*Z'
               OR NEW.effective_from GLOB '*[+-][0-9][0-9]:[0-9][0-9]'))
BEGIN
    SELECT RAISE(ABORT, 'model_pricing.effective_from must be a date or a zoned ISO-8601 instant');
END;
CREATE TRIGGER model_pricing_time_canon_insert AFTER INSERT ON model_pricing
WHEN NEW.effective_from IS NOT strftime('%Y-%m-%dT%H:%M:%fZ', NEW.effective_from)
BEGIN
    UPDATE model_pricing SET effective_from = strftime('%Y-%m-%dT%H:%M:%fZ', NEW.effective_from)
    WHERE model = NEW.model AND bucket = NEW.bucket AND effective_from = NEW.effective_from;
END;
CREATE TRIGGER model_pricing_time_canon_update AFTER UPDATE OF effective_from ON model_pricing
WHEN NEW.effective_from IS NOT strftime('%Y-%m-%dT%H:%M:%fZ', NEW.effective_from)
BEGIN
    UPDATE model_pricing SET effective_from = strftime('%Y-%m-%dT%H:%M:%fZ', NEW.effective_from)
    WHERE model = NEW.model AND bucket = NEW.bucket AND effective_from = NEW.effective_from;
END;

-- The rollup. A token_usage row counts once its occurred_at is canonical (the
-- canonicalising UPDATE above brings a non-canonical insert in through the
-- update trigger). Its key: the UTC quarter-hour slot and the resolved rate
-- (latest effective_from <= occurred_at, inclusive; '' when unpriced).
CREATE TRIGGER token_usage_rollup_insert AFTER INSERT ON token_usage
WHEN NEW.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
BEGIN
    INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tokens, row_count)
    VALUES (NEW.session_id, NEW.model, NEW.bucket,
            substr(NEW.occurred_at, 1, 14) || printf('%02d', CAST(substr(NEW.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
            COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = NEW.model AND p.bucket = NEW.bucket AND p.effective_from <= NEW.occurred_at), ''),
            NEW.tokens, 1)
    ON CONFLICT (session_id, model, bucket, slot, rate_effective_from)
    DO UPDATE SET tokens = tokens + excluded.tokens, row_count = row_count + 1;
END;

CREATE TRIGGER token_usage_rollup_update AFTER UPDATE OF session_id, model, bucket, tokens, occurred_at ON token_usage
BEGIN
    UPDATE token_usage_rollup SET tokens = tokens - OLD.tokens, row_count = row_count - 1
    WHERE OLD.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', OLD.occurred_at)
      AND session_id = OLD.session_id AND model = OLD.model AND bucket = OLD.bucket
      AND slot = substr(OLD.occurred_at, 1, 14) || printf('%02d', CAST(substr(OLD.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z'
      AND rate_effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = OLD.model AND p.bucket = OLD.bucket AND p.effective_from <= OLD.occurred_at), '');
    DELETE FROM token_usage_rollup WHERE row_count = 0
      AND session_id = OLD.session_id AND model = OLD.model AND bucket = OLD.bucket;
    INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tokens, row_count)
    SELECT NEW.session_id, NEW.model, NEW.bucket,
            substr(NEW.occurred_at, 1, 14) || printf('%02d', CAST(substr(NEW.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
            COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = NEW.model AND p.bucket = NEW.bucket AND p.effective_from <= NEW.occurred_at), ''),
            NEW.tokens, 1
    WHERE NEW.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', NEW.occurred_at)
    ON CONFLICT (session_id, model, bucket, slot, rate_effective_from)
    DO UPDATE SET tokens = tokens + excluded.tokens, row_count = row_count + 1;
END;

CREATE TRIGGER token_usage_rollup_delete AFTER DELETE ON token_usage
BEGIN
    UPDATE token_usage_rollup SET tokens = tokens - OLD.tokens, row_count = row_count - 1
    WHERE OLD.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', OLD.occurred_at)
      AND session_id = OLD.session_id AND model = OLD.model AND bucket = OLD.bucket
      AND slot = substr(OLD.occurred_at, 1, 14) || printf('%02d', CAST(substr(OLD.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z'
      AND rate_effective_from = COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                      WHERE p.model = OLD.model AND p.bucket = OLD.bucket AND p.effective_from <= OLD.occurred_at), '');
    DELETE FROM token_usage_rollup WHERE row_count = 0
      AND session_id = OLD.session_id AND model = OLD.model AND bucket = OLD.bucket;
END;

-- A price row added, changed or removed can move usage to another rate:
-- regroup that (model, bucket) from token_usage. Price changes are rare.
CREATE TRIGGER model_pricing_rollup_insert AFTER INSERT ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup WHERE model = NEW.model AND bucket = NEW.bucket;
    INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tokens, row_count)
    SELECT t.session_id, t.model, t.bucket,
           substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
           COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), ''),
           sum(t.tokens), count(*)
    FROM token_usage t
    WHERE t.model = NEW.model AND t.bucket = NEW.bucket
      AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5;
END;

CREATE TRIGGER model_pricing_rollup_update AFTER UPDATE ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup
    WHERE (model = OLD.model AND bucket = OLD.bucket) OR (model = NEW.model AND bucket = NEW.bucket);
    INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tokens, row_count)
    SELECT t.session_id, t.model, t.bucket,
           substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
           COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), ''),
           sum(t.tokens), count(*)
    FROM token_usage t
    WHERE ((t.model = OLD.model AND t.bucket = OLD.bucket) OR (t.model = NEW.model AND t.bucket = NEW.bucket))
      AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5;
END;

CREATE TRIGGER model_pricing_rollup_delete AFTER DELETE ON model_pricing
BEGIN
    DELETE FROM token_usage_rollup WHERE model = OLD.model AND bucket = OLD.bucket;
    INSERT INTO token_usage_rollup (session_id, model, bucket, slot, rate_effective_from, tokens, row_count)
    SELECT t.session_id, t.model, t.bucket,
           substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z',
           COALESCE((SELECT max(p.effective_from) FROM model_pricing p
                     WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), ''),
           sum(t.tokens), count(*)
    FROM token_usage t
    WHERE t.model = OLD.model AND t.bucket = OLD.bucket
      AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)
    GROUP BY 1, 2, 3, 4, 5;
END;
