"""Datasette metadata for an ingestd database (``ingestd datasette-config``): titles, descriptions,
hidden storage tables, the search index wired to ``search_docs``, and canned queries.

The document is Datasette's metadata (``datasette DB -m metadata.json``, Datasette 0.64+), keyed by
the database's name as Datasette names it (the file's stem). Every canned query is read-only SQL
over the projections; none reads ``events_raw.payload`` (compressed: ``ingestd export`` gives the
bytes back). Money comes from ``report.datasette_plugin`` (ingestd's cost rule as SQL functions, and
its cost-per-day, -model and -session queries); these queries give tokens and messages.
"""

from __future__ import annotations

from typing import Any

TABLES: dict[str, str] = {
    "sessions": "One row per Claude Code session: project, times, status, title, slug, version.",
    "agents": "The agent tree: each session's main agent and its subagents (type, status, parent, outcome).",
    "orchestration_edges": "Who spawned whom: parent agent -> child agent, with the spawning tool call.",
    "token_usage": "One row per billed message: tokens per bucket, model, time, the evidence's claim rank.",
    "token_usage_rollup": "Tokens per bucket per session, model and quarter-hour slot, equal to a scan of token_usage.",
    "tool_calls": "Every tool call: name, agent, start, end, status.",
    "compactions": "Context compactions: when, which agent, trigger, tokens before.",
    "prompts": "Each user prompt of a session (promptId): its text, its place, when it was first and last named.",
    "cc_model_usage": "Claude Code's own totals per session and model (cost-state), beside ingestd's; never added.",
    "events": "Hook deliveries (one per event; pruned by retention).",
    "rate_limit_samples": "Claude Code's official plan limits from the status line (5-hour, 7-day).",
    "search_docs": "What the full-text index holds: prompts, assistant text, tool inputs, titles, summaries.",
    "quarantine": "Log rows a projection could not use, with the reason.",
    "model_pricing": "Price rows: USD per million tokens per model and bucket from a date, tiers, multipliers.",
    "events_raw": "The append-only log, a view over its storage tables (payloads are compressed: `ingestd export`"
    " writes them back).",
}
HIDDEN = (
    "payload_blocks", "payload_codecs", "payload_open", "payload_open_blocks", "payload_sealed", "rollup_deferred",
    "ingest_checkpoints", "ingest_stats", "meta", "schema_version", "prune_receipts", "summaries",
    "search_fts", "search_fts_config", "search_fts_data", "search_fts_docsize", "search_fts_idx",
    "log_rows", "log_origins", "log_sessions", "log_kinds", "search_doc_rows", "tool_call_rows",
)  # fmt: skip

_BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
# the rollup's five bucket sums and its message count (row_count: one per message)
_PIVOT = ", ".join(f"sum({b}) as {b}" for b in _BUCKETS)
_MESSAGES = "sum(row_count)"
_TOKENS = "sum(" + " + ".join(f"{{t}}{b}" for b in _BUCKETS) + ")"

_SEARCH = (
    "select d.session_id, d.agent_id, d.kind, d.label, d.occurred_at, s.project_path,"
    " coalesce(s.title, s.slug) as name from search_fts f join search_docs d on d.doc_id = f.rowid"
    " left join sessions s on s.id = d.session_id where search_fts match {match} order by f.rank limit 100"
)

QUERIES: dict[str, dict[str, str]] = {
    "sessions_recent": {
        "title": "Sessions, most recently active first",
        "sql": (
            "select s.id, s.project_path, coalesce(s.title, s.slug) as name, s.started_at, s.last_activity_at,"
            " s.status, (select count(*) from agents a where a.session_id = s.id) as agents"
            " from sessions s order by s.last_activity_at desc limit 100"
        ),
    },
    "tokens_per_day": {
        "title": "Tokens per UTC day and model",
        "description": "From the rollup (quarter-hour slots). Cost: the cost_per_day query.",
        "sql": (
            f"select substr(slot, 1, 10) as day, model, {_MESSAGES} as messages, {_PIVOT}"
            " from token_usage_rollup group by 1, 2 order by 1 desc, 2"
        ),
    },
    "tokens_per_session": {
        "title": "Tokens per session",
        "sql": (
            f"select r.session_id, s.project_path, coalesce(s.title, s.slug) as name, {_MESSAGES} as messages,"
            f" {_TOKENS.format(t='r.')} as tokens from token_usage_rollup r left join sessions s on s.id = r.session_id"
            " group by 1 order by tokens desc limit 200"
        ),
    },
    "tokens_per_agent": {
        "title": "Tokens per agent of a session",
        "sql": (
            "select t.agent_id, a.type, a.subagent_type, a.description, count(*) as messages,"
            f" {_TOKENS.format(t='t.')} as tokens from token_usage t left join agents a on a.session_id = t.session_id"
            " and a.id = coalesce(t.agent_id, t.session_id)"
            " where t.session_id = :session group by 1 order by tokens desc"
        ),
    },
    "tool_calls_by_tool": {
        "title": "Tool calls per tool and status",
        "sql": "select tool_name, status, count(*) as calls from tool_calls group by 1, 2 order by calls desc",
    },
    "failed_tool_calls": {
        "title": "Failed, denied and interrupted tool calls, newest first",
        "sql": (
            "select c.session_id, c.agent_id, c.tool_name, c.status, c.started_at, c.ended_at, s.project_path"
            " from tool_calls c left join sessions s on s.id = c.session_id"
            " where c.status in ('failed', 'denied', 'interrupted') order by c.started_at desc limit 200"
        ),
    },
    "search": {
        "title": "Search prompts, assistant text and tool inputs",
        "description": "Every word required, punctuation and all, as `ingestd search` reads them;"
        " search_fts takes FTS5's own syntax. Snippets: `ingestd search`.",
        "sql": _SEARCH.format(match="ingestd_search_terms(:q)"),
    },
    "search_fts": {
        "title": "Search with FTS5 syntax",
        "description": 'FTS5 query syntax: words, "phrases", prefix*, AND / OR / NOT, NEAR(...)'
        " (`ingestd search --fts`).",
        "sql": _SEARCH.format(match=":q"),
    },
}


def metadata(db_name: str) -> dict[str, Any]:
    """Datasette metadata for the database Datasette names ``db_name`` (the file's stem)."""
    tables: dict[str, Any] = {name: {"description": text} for name, text in TABLES.items()}
    tables["search_docs"] |= {"fts_table": "search_fts", "fts_pk": "doc_id"}
    for name in HIDDEN:
        tables[name] = {"hidden": True}
    return {
        "title": "ingestd",
        "description": "What Claude Code agents did: sessions, agents, tool calls and tokens, from ingestd's log.",
        "databases": {db_name: {"tables": tables, "queries": QUERIES}},
    }
