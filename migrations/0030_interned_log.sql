-- 0030: the log with its strings interned (SPEC §3, §11).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- events_raw repeated on every row the transcript path (origin), the session id, the source and
-- record type, the receipt time and a key of about 60 characters built from them, each in the row
-- and the key again in its UNIQUE index: most of the log's bytes once payloads went into blocks.
-- Now:
--   log_origins  one row per origin (transcript path, 'hook', ...) with its hash
--                (ingestd.core.keys.origin_hash: the 16 hex digits its lines' keys start with);
--   log_sessions one row per session id;
--   log_kinds    one row per (source, event_type);
--   log_rows     the rows, naming the three by integer id, the receipt time as integer
--                milliseconds since the epoch (a time that is not canonical UTC from 1970 on is
--                kept as its text). A transcript line whose key is exactly
--                jsonl_key(hash, gen, offset, line) keeps no key text: its key is rebuilt from
--                the origin's hash, gen, offset and the line's 8-byte blake2b (line_check), and
--                its uniqueness is the index on (origin_id, origin_gen, origin_offset, line_check).
--                Every other row (hooks, resets, quarantine markers, status line, OTLP, ...)
--                keeps its key as text, unique.
-- The payload bytes and every other column are unchanged. events_raw is now a view giving the
-- exact columns and values it had, key text and time text included; INSTEAD OF triggers refuse
-- UPDATE and DELETE on it with the log's message, and BEFORE triggers refuse them on the four
-- tables. An INSERT into the view appends as before (interning what it names; a duplicate key is
-- refused by the same unique indexes; its time kept as text); ingestd itself writes log_rows (ingestd.store.logrows).
--
-- The rows are copied with their ids (every projection names log rows by id). ingestd_origin_hash
-- is the SQL function every ingestd connection has (ingestd.store.connection.register_functions).

CREATE TABLE log_origins (
    id     INTEGER PRIMARY KEY,
    origin TEXT NOT NULL UNIQUE,      -- transcript path relative to its projects root, or 'hook', ...
    hash   TEXT NOT NULL              -- origin_hash(origin)
);
CREATE TABLE log_sessions (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE
);
CREATE TABLE log_kinds (
    id         INTEGER PRIMARY KEY,
    source     TEXT NOT NULL CHECK (source IN ('hook', 'jsonl', 'ingestd', 'statusline', 'otlp')),
    event_type TEXT NOT NULL,
    UNIQUE (source, event_type)
);
CREATE TABLE log_rows (
    id            INTEGER PRIMARY KEY,
    key           TEXT,               -- the idempotency key; NULL: a transcript line's, rebuilt
    line_check    BLOB,               -- 8 bytes, blake2b-8 of the line, when key is NULL
    kind          INTEGER NOT NULL,   -- log_kinds.id
    payload       TEXT NOT NULL,      -- as events_raw.payload (ingestd.store.payload)
    received      NOT NULL,           -- receipt time: integer ms since the epoch, or its text
    sid           INTEGER,            -- log_sessions.id (NULL: session unknown)
    origin_id     INTEGER NOT NULL,   -- log_origins.id
    origin_gen    INTEGER NOT NULL DEFAULT 0,
    origin_offset INTEGER,
    codec         INTEGER NOT NULL DEFAULT 0,
    CHECK ((key IS NULL) = (line_check IS NOT NULL) AND (line_check IS NULL OR length(line_check) = 8))
);

INSERT INTO log_origins (origin, hash)
SELECT origin, ingestd_origin_hash(origin) FROM events_raw GROUP BY origin ORDER BY min(id);
INSERT INTO log_sessions (session_id)
SELECT session_id FROM events_raw WHERE session_id IS NOT NULL GROUP BY session_id ORDER BY min(id);
INSERT INTO log_kinds (source, event_type)
SELECT source, event_type FROM events_raw GROUP BY source, event_type ORDER BY min(id);

INSERT INTO log_rows (id, key, line_check, kind, payload, received, sid, origin_id, origin_gen, origin_offset,
                      codec)
SELECT id, CASE WHEN line_check IS NULL THEN idempotency_key END, line_check, kind, payload,
       CASE WHEN ms >= 0 AND strftime('%Y-%m-%dT%H:%M:%S', ms / 1000, 'unixepoch') || '.'
                             || printf('%03d', ms % 1000) || 'Z' = received_at
            THEN ms ELSE received_at END,
       sid, origin_id, origin_gen, origin_offset, codec
  FROM (SELECT e.*, o.id AS origin_id, s.id AS sid, k.id AS kind,
               CASE WHEN e.received_at GLOB
                         '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
                    THEN unixepoch(substr(e.received_at, 1, 19)) * 1000 + CAST(substr(e.received_at, 21, 3) AS INTEGER)
               END AS ms,
               CASE WHEN e.origin_offset IS NOT NULL
                     AND e.idempotency_key = 'j:' || o.hash || ':' || e.origin_gen || ':'
                         || printf('%012x', e.origin_offset) || ':'
                         || lower(hex(unhex(substr(e.idempotency_key, -16))))
                    THEN unhex(substr(e.idempotency_key, -16)) END AS line_check
          FROM events_raw e
          JOIN log_origins o ON o.origin = e.origin
          JOIN log_kinds k ON k.source = e.source AND k.event_type = e.event_type
          LEFT JOIN log_sessions s ON s.session_id = e.session_id
         ORDER BY e.id);

CREATE TEMP TABLE migration_0030_check (same INTEGER NOT NULL CHECK (same = 1));
INSERT INTO migration_0030_check SELECT (SELECT count(*) FROM events_raw) = (SELECT count(*) FROM log_rows);
DROP TABLE migration_0030_check;

DROP TABLE events_raw;

CREATE UNIQUE INDEX log_rows_key ON log_rows (key) WHERE key IS NOT NULL;
CREATE UNIQUE INDEX log_rows_origin ON log_rows (origin_id, origin_gen, origin_offset, line_check);
CREATE INDEX log_rows_session ON log_rows (sid, id);

CREATE VIEW events_raw (id, idempotency_key, source, event_type, payload, received_at, session_id, origin,
                        origin_gen, origin_offset, codec) AS
SELECT r.id,
       coalesce(r.key, 'j:' || o.hash || ':' || r.origin_gen || ':' || printf('%012x', r.origin_offset) || ':'
                || lower(hex(r.line_check))),
       k.source, k.event_type, r.payload,
       CASE WHEN typeof(r.received) = 'integer'
            THEN strftime('%Y-%m-%dT%H:%M:%S', r.received / 1000, 'unixepoch') || '.' || printf('%03d', r.received % 1000)
                 || 'Z'
            ELSE r.received END,
       s.session_id, o.origin, r.origin_gen, r.origin_offset, r.codec
  FROM log_rows r
  JOIN log_kinds k ON k.id = r.kind
  JOIN log_origins o ON o.id = r.origin_id
  LEFT JOIN log_sessions s ON s.id = r.sid;

CREATE TRIGGER events_raw_no_update INSTEAD OF UPDATE ON events_raw
BEGIN
    SELECT RAISE(ABORT, 'events_raw is append-only: rows are never updated');
END;
CREATE TRIGGER events_raw_no_delete INSTEAD OF DELETE ON events_raw
BEGIN
    SELECT RAISE(ABORT, 'events_raw is append-only: rows are never deleted');
END;
CREATE TRIGGER log_rows_no_update BEFORE UPDATE ON log_rows
BEGIN
    SELECT RAISE(ABORT, 'events_raw is append-only: rows are never updated');
END;
CREATE TRIGGER log_rows_no_delete BEFORE DELETE ON log_rows
BEGIN
    SELECT RAISE(ABORT, 'events_raw is append-only: rows are never deleted');
END;
CREATE TRIGGER log_origins_no_update BEFORE UPDATE ON log_origins
BEGIN
    SELECT RAISE(ABORT, 'log_origins is append-only: rows are never updated');
END;
CREATE TRIGGER log_origins_no_delete BEFORE DELETE ON log_origins
BEGIN
    SELECT RAISE(ABORT, 'log_origins is append-only: rows are never deleted');
END;
CREATE TRIGGER log_kinds_no_update BEFORE UPDATE ON log_kinds
BEGIN
    SELECT RAISE(ABORT, 'log_kinds is append-only: rows are never updated');
END;
CREATE TRIGGER log_kinds_no_delete BEFORE DELETE ON log_kinds
BEGIN
    SELECT RAISE(ABORT, 'log_kinds is append-only: rows are never deleted');
END;
CREATE TRIGGER log_sessions_no_update BEFORE UPDATE ON log_sessions
BEGIN
    SELECT RAISE(ABORT, 'log_sessions is append-only: rows are never updated');
END;
CREATE TRIGGER log_sessions_no_delete BEFORE DELETE ON log_sessions
BEGIN
    SELECT RAISE(ABORT, 'log_sessions is append-only: rows are never deleted');
END;
CREATE TRIGGER events_raw_insert INSTEAD OF INSERT ON events_raw
BEGIN
    INSERT INTO log_origins (origin, hash)
    SELECT NEW.origin, ingestd_origin_hash(NEW.origin)
     WHERE NOT EXISTS (SELECT 1 FROM log_origins WHERE origin = NEW.origin);
    INSERT INTO log_sessions (session_id)
    SELECT NEW.session_id
     WHERE NEW.session_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM log_sessions WHERE session_id = NEW.session_id);
    INSERT INTO log_kinds (source, event_type)
    SELECT NEW.source, NEW.event_type
     WHERE NOT EXISTS (SELECT 1 FROM log_kinds WHERE source = NEW.source AND event_type = NEW.event_type);
    INSERT INTO log_rows (key, line_check, kind, payload, received, sid, origin_id, origin_gen, origin_offset, codec)
    SELECT CASE WHEN c.line_check IS NULL THEN NEW.idempotency_key END, c.line_check,
           (SELECT id FROM log_kinds WHERE source = NEW.source AND event_type = NEW.event_type), NEW.payload,
           NEW.received_at, (SELECT id FROM log_sessions WHERE session_id = NEW.session_id), c.oid,
           coalesce(NEW.origin_gen, 0), NEW.origin_offset, coalesce(NEW.codec, 0)
      FROM (SELECT o.id AS oid,
                   CASE WHEN NEW.origin_offset IS NOT NULL
                         AND NEW.idempotency_key = 'j:' || o.hash || ':' || coalesce(NEW.origin_gen, 0) || ':'
                             || printf('%012x', NEW.origin_offset) || ':'
                             || lower(hex(unhex(substr(NEW.idempotency_key, -16))))
                        THEN unhex(substr(NEW.idempotency_key, -16)) END AS line_check
              FROM log_origins o WHERE o.origin = NEW.origin) c;
END;
