-- 0016: a session's agent team, as SQLite's 0032: sessions.team_name / agent_name.
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py PG_PINS.
ALTER TABLE sessions ADD COLUMN team_name text COLLATE "C";
ALTER TABLE sessions ADD COLUMN agent_name text COLLATE "C";
CREATE INDEX sessions_team_name ON sessions (team_name) WHERE team_name IS NOT NULL;
