-- One local database shipping as a host, not two (SPEC §13). A host's log diverges when the local
-- database at the mark no longer holds the shipped row: restored from a backup (taken: the log is
-- shipped again, keys the store has skipped), or one database copied to two machines, both
-- shipping as the same host. The mark left behind at a divergence is kept: a database that still
-- holds it is the other copy, and is refused (refused_at) instead of taking the mark back and
-- re-sending its whole log on every ship.
ALTER TABLE hosts ADD COLUMN abandoned_through bigint;
ALTER TABLE hosts ADD COLUMN abandoned_key text COLLATE "C";
ALTER TABLE hosts ADD COLUMN diverged_at timestamptz;
ALTER TABLE hosts ADD COLUMN refused_at timestamptz;
