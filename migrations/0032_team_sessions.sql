-- 0032: what a session says of the agent team it belongs to (DESIGN.md "Teammates").
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- sessions: `team_name` / `agent_name`, the teamName / agentName of the main transcript's records
-- (a team member's records carry both). A teammate run in its own terminal (tmux mode) is a
-- session of its own; its lead is joined across sessions when read (ingestd.report.teammates).
-- The projection revision bump re-projects every database from its log on the first open by a
-- writer.
ALTER TABLE sessions ADD COLUMN team_name TEXT;
ALTER TABLE sessions ADD COLUMN agent_name TEXT;
CREATE INDEX sessions_team_name ON sessions (team_name) WHERE team_name IS NOT NULL;
