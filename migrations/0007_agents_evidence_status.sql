-- 0007: agents.evidence_status, the status the evidence alone gives (SPEC §4.2).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- `status` is what users read: the evidence status, or `unknown` when the watchdog found the
-- agent idle. Keeping the evidence status beside it lets the watchdog pass give it back when
-- the agent turns out not to be idle after all (a subagent of it is still working), without
-- re-deriving the agent, so the pass stays a function of the final state (replay equals live).
ALTER TABLE agents ADD COLUMN evidence_status TEXT
    CHECK (evidence_status IS NULL OR evidence_status IN ('working', 'waiting', 'completed', 'error', 'unknown'));
UPDATE agents SET evidence_status = status WHERE status <> 'unknown';
