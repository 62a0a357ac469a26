-- 0029: forks as orchestration_edges rows of provenance 'fork' (ingestd.store.forks).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- A fork's parent is found by the compaction whose boundary is the fork's root; the edge is
-- recomputed after each fold step, so that lookup is indexed. The edges themselves need no schema
-- change ('fork' is a provenance since 0020); the projection revision bump re-projects every
-- database from its log on the first open by a writer, which writes them.
CREATE INDEX compactions_boundary ON compactions (boundary_id);
