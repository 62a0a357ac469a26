-- 0015: forks as orchestration_edges rows of provenance 'fork', as SQLite's 0029: the lookup of a
-- fork's parent by the compaction whose boundary is its root, indexed.
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py PG_PINS.
CREATE INDEX compactions_boundary ON compactions (boundary_id);
