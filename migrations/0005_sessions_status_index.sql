-- 0005: the watchdog pass finds live sessions through an index (DESIGN.md "Status").
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
-- The pass runs after every write transaction (each hook group, each tailed append):
--   UPDATE sessions SET status = 'unknown' WHERE status IN ('working', 'waiting') AND last_activity_at < ?
-- With only sessions_last_activity it walked every session older than the cutoff, nearly all
-- of history (1.2 ms per transaction on the 1 GB corpus's 3,000 sessions, growing with it);
-- with (status, last_activity_at) it reads just the live ones, like agents_status for agents.
CREATE INDEX sessions_status ON sessions (status, last_activity_at);
