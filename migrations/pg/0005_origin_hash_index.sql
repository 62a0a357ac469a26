-- The log's origin is held whole (a path under a projects root can be longer than the 2,704 bytes
-- a btree index entry holds, and one such row refused would stop its host's shipping for good):
-- the leaf lookup of titles (ingestd.central.project.resolve_titles) finds a file's rows through a
-- hash index, which keeps a 4-byte hash of any length of text. The session index needs no change:
-- the log's session ids are storable (ingestd.core.storable), at most 512 bytes.
DROP INDEX events_raw_origin;
CREATE INDEX events_raw_origin ON events_raw USING hash (origin);
