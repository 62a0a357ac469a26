-- 0018: token_usage's time guard and canonicalisation, one trigger per statement kind instead of two
-- (issue 14). Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- 0002 gave token_usage.occurred_at two triggers per kind: a BEFORE guard that refuses what is
-- not a date or a zoned ISO-8601 instant (SPEC §5.4), and an AFTER trigger that rewrites what it
-- admits in the canonical spelling. Every row ran both, and the guard's test (a GLOB, date(),
-- strftime(), two more GLOBs) even for the canonical values the projector always writes: on a
-- backfill they were about half the cost of writing token_usage (BENCHMARKS.md, "fourth round").
--
-- One AFTER trigger now does both, and only for a value that is not already canonical: a value
-- equal to strftime('%Y-%m-%dT%H:%M:%fZ', itself) is text of the form YYYY-MM-DDTHH:MM:SS.sssZ
-- with a real date, so it passes every clause of the guard; anything else is refused with the
-- guard's message (RAISE(ABORT) undoes the whole statement, as the BEFORE trigger did) or
-- rewritten canonical, which brings it into the rollup through the update trigger as before.
-- What changes: NULL is refused by the column's NOT NULL (a constraint error, as before, with
-- SQLite's own message), and the INSERT half of an upsert that ends in its DO UPDATE is checked
-- only if the update writes occurred_at (the value is stored nowhere otherwise). model_pricing
-- keeps 0002's triggers (a price row is written rarely).

DROP TRIGGER token_usage_time_guard_insert;
DROP TRIGGER token_usage_time_canon_insert;
DROP TRIGGER token_usage_time_guard_update;
DROP TRIGGER token_usage_time_canon_update;

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
