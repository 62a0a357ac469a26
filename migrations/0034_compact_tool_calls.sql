-- 0034: the tool calls in a compact table behind the view tool_calls (SPEC §11: a database at
-- most a third of the corpus).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- tool_calls kept in every row, and in its key, the session id as text (36 characters), the agent
-- id again (the main agent's id is the session's), both times as text (24 each) and the status as
-- text: 1.56 MB of the c100 corpus's 33.6 MB database, 0.24 MB of it the slack of a key in random
-- order. tool_call_rows keeps:
--   sid       the session's log_sessions.id (the log names every session it folds), first in the
--             key, so a session's calls sit together;
--   agent_id  0 when it is the session's own id, else its text (NULL: none);
--   started, ended  integer milliseconds since the epoch when canonical UTC from 1970 on, else
--             the text (NULL: none), as log_rows.received;
--   status    0-4 for 'running', 'completed', 'failed', 'interrupted', 'denied';
--   tool_use_id, tool_name, prompt_id, reason as they were.
-- The view tool_calls gives back every column and value it had. ingestd writes tool_call_rows
-- (ingestd.store.upsert); an INSERT into the view writes it too, a DELETE from it deletes.
CREATE TABLE tool_call_rows (
    sid         INTEGER NOT NULL,     -- log_sessions.id of the call's session
    tool_use_id TEXT NOT NULL,
    agent_id    CHECK (agent_id IS NULL OR agent_id = 0 OR typeof(agent_id) = 'text'),
    tool_name   TEXT,
    started,                          -- started_at: integer ms since the epoch, or its text, or NULL
    ended,                            -- ended_at: the same
    status      INTEGER NOT NULL CHECK (status IN (0, 1, 2, 3, 4)),
    prompt_id   TEXT,
    reason      TEXT,
    PRIMARY KEY (sid, tool_use_id)
) WITHOUT ROWID;

INSERT INTO log_sessions (session_id)
SELECT session_id FROM tool_calls
 WHERE session_id NOT IN (SELECT session_id FROM log_sessions)
 GROUP BY session_id ORDER BY session_id;

INSERT INTO tool_call_rows (sid, tool_use_id, agent_id, tool_name, started, ended, status, prompt_id, reason)
SELECT s.id, c.tool_use_id, CASE WHEN c.agent_id = c.session_id THEN 0 ELSE c.agent_id END, c.tool_name,
       CASE WHEN c.started_ms >= 0 AND strftime('%Y-%m-%dT%H:%M:%S', c.started_ms / 1000, 'unixepoch') || '.'
                                       || printf('%03d', c.started_ms % 1000) || 'Z' = c.started_at
            THEN c.started_ms ELSE c.started_at END,
       CASE WHEN c.ended_ms >= 0 AND strftime('%Y-%m-%dT%H:%M:%S', c.ended_ms / 1000, 'unixepoch') || '.'
                                     || printf('%03d', c.ended_ms % 1000) || 'Z' = c.ended_at
            THEN c.ended_ms ELSE c.ended_at END,
       CASE c.status WHEN 'running' THEN 0 WHEN 'completed' THEN 1 WHEN 'failed' THEN 2 WHEN 'interrupted' THEN 3
                     ELSE 4 END,
       c.prompt_id, c.reason
  FROM (SELECT tool_calls.*,
               CASE WHEN started_at GLOB
                         '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
                    THEN unixepoch(substr(started_at, 1, 19)) * 1000 + CAST(substr(started_at, 21, 3) AS INTEGER)
               END AS started_ms,
               CASE WHEN ended_at GLOB
                         '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
                    THEN unixepoch(substr(ended_at, 1, 19)) * 1000 + CAST(substr(ended_at, 21, 3) AS INTEGER)
               END AS ended_ms
          FROM tool_calls) c
  JOIN log_sessions s ON s.session_id = c.session_id
 ORDER BY s.id, c.tool_use_id;

CREATE TEMP TABLE migration_0034_check (same INTEGER NOT NULL CHECK (same = 1));
INSERT INTO migration_0034_check SELECT (SELECT count(*) FROM tool_calls) = (SELECT count(*) FROM tool_call_rows);
DROP TABLE migration_0034_check;

DROP TABLE tool_calls;

CREATE VIEW tool_calls (session_id, tool_use_id, agent_id, tool_name, started_at, ended_at, status, prompt_id,
                        reason) AS
SELECT s.session_id, c.tool_use_id,
       CASE WHEN typeof(c.agent_id) = 'integer' THEN s.session_id ELSE c.agent_id END,
       c.tool_name,
       CASE WHEN typeof(c.started) = 'integer'
            THEN strftime('%Y-%m-%dT%H:%M:%S', c.started / 1000, 'unixepoch') || '.' || printf('%03d', c.started % 1000)
                 || 'Z'
            ELSE c.started END,
       CASE WHEN typeof(c.ended) = 'integer'
            THEN strftime('%Y-%m-%dT%H:%M:%S', c.ended / 1000, 'unixepoch') || '.' || printf('%03d', c.ended % 1000)
                 || 'Z'
            ELSE c.ended END,
       CASE c.status WHEN 0 THEN 'running' WHEN 1 THEN 'completed' WHEN 2 THEN 'failed' WHEN 3 THEN 'interrupted'
                     ELSE 'denied' END,
       c.prompt_id, c.reason
  FROM tool_call_rows c
  JOIN log_sessions s ON s.id = c.sid;

-- An INSERT into the view writes the compact row, as ingestd's own upsert does, and a DELETE from
-- it deletes its row (a hand-made row, a script); a call stored already is refused by the key, as
-- the table refused it.
CREATE TRIGGER tool_calls_insert INSTEAD OF INSERT ON tool_calls
BEGIN
    INSERT INTO log_sessions (session_id)
    SELECT NEW.session_id WHERE NOT EXISTS (SELECT 1 FROM log_sessions WHERE session_id = NEW.session_id);
    INSERT INTO tool_call_rows (sid, tool_use_id, agent_id, tool_name, started, ended, status, prompt_id, reason)
    VALUES ((SELECT id FROM log_sessions WHERE session_id = NEW.session_id), NEW.tool_use_id,
            CASE WHEN NEW.agent_id = NEW.session_id THEN 0 ELSE NEW.agent_id END, NEW.tool_name,
            (SELECT CASE WHEN ms >= 0 AND strftime('%Y-%m-%dT%H:%M:%S', ms / 1000, 'unixepoch') || '.'
                              || printf('%03d', ms % 1000) || 'Z' = NEW.started_at
                         THEN ms ELSE NEW.started_at END
               FROM (SELECT CASE WHEN NEW.started_at GLOB
                                      '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
                                 THEN unixepoch(substr(NEW.started_at, 1, 19)) * 1000
                                      + CAST(substr(NEW.started_at, 21, 3) AS INTEGER) END AS ms)),
            (SELECT CASE WHEN ms >= 0 AND strftime('%Y-%m-%dT%H:%M:%S', ms / 1000, 'unixepoch') || '.'
                              || printf('%03d', ms % 1000) || 'Z' = NEW.ended_at
                         THEN ms ELSE NEW.ended_at END
               FROM (SELECT CASE WHEN NEW.ended_at GLOB
                                      '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
                                 THEN unixepoch(substr(NEW.ended_at, 1, 19)) * 1000
                                      + CAST(substr(NEW.ended_at, 21, 3) AS INTEGER) END AS ms)),
            CASE NEW.status WHEN 'running' THEN 0 WHEN 'completed' THEN 1 WHEN 'failed' THEN 2 WHEN 'interrupted' THEN 3
                            WHEN 'denied' THEN 4 END,
            NEW.prompt_id, NEW.reason);
END;

CREATE TRIGGER tool_calls_delete INSTEAD OF DELETE ON tool_calls
BEGIN
    DELETE FROM tool_call_rows
     WHERE sid = (SELECT id FROM log_sessions WHERE session_id = OLD.session_id) AND tool_use_id = OLD.tool_use_id;
END;
