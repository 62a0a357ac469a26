-- 0006: cheaper writes of token_usage and tool_calls.
-- Immutable once released: its SHA-256 is pinned in ingestd/core/ledger.py.
--
-- These indexes were filled in random key order on every ingest (agent ids and model
-- names are scattered over the whole table), so each commit rewrote most of their pages
-- and cold ingest grew faster than the corpus. No read path uses them: reports reach
-- token_usage and tool_calls by session, the cost rollup has its own keys, and a price
-- change regroups its (model, bucket) with one scan of token_usage (prices change rarely).
DROP INDEX token_usage_agent;
DROP INDEX token_usage_model;
DROP INDEX tool_calls_agent;
