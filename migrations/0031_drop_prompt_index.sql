-- 0031: tool_calls_prompt goes (SPEC §11: a database at most a third of the corpus).
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- 0023 indexed tool_calls on (session_id, prompt_id), but every reader of prompt_id reads a
-- session's calls by its primary key (session_id, tool_use_id) and groups them in Python
-- (ingestd.report.prompts): the index served no query and took 0.66 MB of the c100 corpus's 35 MB
-- database (the session id again in every entry, a NULL prompt_id in most). Dropping an index
-- rewrites no row.
DROP INDEX IF EXISTS tool_calls_prompt;
