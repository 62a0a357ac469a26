-- 0021: status-line snapshots in the log, and the official plan limits they carry (SPEC §3, §15).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- events_raw.source admits 'statusline' (and 'otlp', SPEC §3's other later source). Widening a
-- CHECK changes nothing stored, so the table's definition is edited in place, as SQLite documents
-- for such changes (lang_altertable.html, "Making Other Kinds Of Table Schema Changes"), instead
-- of copying a log of any size: writable_schema, the one definition rewritten, RESET reloading the
-- schema on this connection; the CREATE TABLE after it moves the schema cookie, so every other
-- connection reloads it too. The check table below refuses to go on (its CHECK fails, the
-- transaction rolls back) unless the definition now names 'statusline'.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
   SET sql = replace(sql, 'CHECK (source IN (''hook'', ''jsonl'', ''ingestd''))',
                          'CHECK (source IN (''hook'', ''jsonl'', ''ingestd'', ''statusline'', ''otlp''))')
 WHERE type = 'table' AND name = 'events_raw';
PRAGMA writable_schema = RESET;
CREATE TEMP TABLE migration_0021_check (widened INTEGER NOT NULL CHECK (widened = 1));
INSERT INTO migration_0021_check
SELECT instr(sql, '''statusline''') > 0 FROM sqlite_master WHERE type = 'table' AND name = 'events_raw';
DROP TABLE migration_0021_check;

-- One row per logged snapshot (ingestd.core.statusline.sample_row). Percentages are Claude Code's
-- used_percentage (0-100); resets_at canonical UTC; a *_flag names what is not sound (null,
-- bad_percentage, reset_past, reset_absurd), NULL when sound or the window is absent.
CREATE TABLE rate_limit_samples (
    raw_event_id        INTEGER PRIMARY KEY,   -- events_raw.id
    session_id          TEXT NOT NULL,
    sampled_at          TEXT NOT NULL,         -- receipt time (events_raw.received_at)
    model               TEXT,
    five_hour_pct       REAL,
    five_hour_resets_at TEXT,
    five_hour_flag      TEXT,
    seven_day_pct       REAL,
    seven_day_resets_at TEXT,
    seven_day_flag      TEXT,
    cc_cost_usd         REAL,                  -- Claude Code's own session cost estimate
    context_used_pct    REAL,
    cc_version          TEXT
);
CREATE INDEX rate_limit_samples_time ON rate_limit_samples (sampled_at, raw_event_id);
CREATE INDEX rate_limit_samples_session ON rate_limit_samples (session_id, sampled_at);
