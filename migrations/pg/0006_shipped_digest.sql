-- The evidence a resumed ship checks (SPEC §13): shipped_digest is the running digest of the
-- idempotency keys of the host's local rows 1..shipped_through, in local id order
-- (ingestd.core.keys.chain_digest), written with the mark. A database whose own keys up to the
-- mark give another digest is not the log the store holds (restored from a backup, replaced,
-- copied), whatever key it has at the mark. NULL: shipped before the digest was kept (checked once
-- by the keys themselves, then kept).
ALTER TABLE hosts ADD COLUMN shipped_digest text;
