-- 0008: quarantine, the records the projector did not project whole (SPEC §12 "No input stops
-- the pipeline"). Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- One row per (log row, reason). The log row itself stays in events_raw; this table says why
-- it was not projected as it stands (`timestamp`: not an instant, its usage counted at an
-- inferred time; `tokens`: a usage counter that is not a count, counted as 0; `storage`: the
-- database refused the row's projection, isolated by splitting its batch) and where it is
-- (origin, byte offset). `timestamp` and `tokens` rows are a projection (the pure projector
-- derives them, replay rebuilds them); `storage` rows are replayed from their `quarantine`
-- log rows (source `ingestd`).
CREATE TABLE quarantine (
    raw_event_id  INTEGER NOT NULL,
    reason        TEXT NOT NULL CHECK (reason IN ('timestamp', 'tokens', 'storage')),
    session_id    TEXT,
    origin        TEXT NOT NULL,
    origin_offset INTEGER,
    detail        TEXT NOT NULL,
    PRIMARY KEY (raw_event_id, reason)
) WITHOUT ROWID;
CREATE INDEX quarantine_reason ON quarantine (reason, raw_event_id);
