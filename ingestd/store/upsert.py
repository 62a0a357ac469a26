"""Projection upserts (SPEC §4, DESIGN.md "Projections"), inside the caller's write transaction.

Every statement's column list comes from its row type's fields (``ingestd.core.rows``), so the
column order is written once. What differs per table is only the conflict key, the columns an
update replaces and, for ``token_usage``, the claim rule.
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw

from ingestd.core.derive import Changes
from ingestd.core.rows import (
    AgentRow,
    Checkpoint,
    CompactionRow,
    EdgeRow,
    EventRow,
    QuarantineRow,
    SessionRow,
    TokenUsageRow,
    ToolCallRow,
)
from ingestd.store import bulk, titles
from ingestd.store.sqlgen import upsert_sql

UPSERT_SESSION = upsert_sql("sessions", SessionRow._fields, ("id",))
# An agent is identified by (session_id, id) (SPEC §4.2, migration 0009): each session's fold
# owns its agents' rows, so a later row of the same session simply replaces the earlier one.
# `evidence_status` is the status the evidence gives (the watchdog may later move `status`).
UPSERT_AGENT = upsert_sql(
    "agents", AgentRow._fields, ("session_id", "id"), extra=(("evidence_status", AgentRow._fields.index("status") + 1),)
)
# One current edge per child: better evidence corrects the parent in place (SPEC §4.3); the id is
# a function of the key, so it stays.
UPSERT_EDGE = upsert_sql(
    "orchestration_edges",
    EdgeRow._fields,
    ("session_id", "child_agent_id"),
    update=EdgeRow._fields[2:3] + EdgeRow._fields[4:],
)
_TOKEN_UPDATE = tuple(f for f in TokenUsageRow._fields if f not in ("id", "message_id", "bucket"))
# The better claim on a message wins whatever the order sessions are folded in (DESIGN.md):
# higher claim_rank, then earlier occurred_at, then the smaller session id. A session's own
# claim is its fold's current best: it replaces its earlier one (an inferred occurred_at,
# ingestd.core.validate, can move either way as the file's timestamps arrive). Unchanged rows
# are not rewritten.
UPSERT_TOKENS = upsert_sql(
    "token_usage",
    TokenUsageRow._fields,
    ("message_id", "bucket"),
    update=_TOKEN_UPDATE,
    where=" WHERE (excluded.claim_rank > token_usage.claim_rank"
    "   OR (excluded.session_id = token_usage.session_id AND excluded.claim_rank = token_usage.claim_rank)"
    "   OR (excluded.claim_rank = token_usage.claim_rank AND (excluded.occurred_at < token_usage.occurred_at"
    "     OR (excluded.occurred_at = token_usage.occurred_at AND excluded.session_id <= token_usage.session_id))))"
    " AND (" + " OR ".join(f"excluded.{c} IS NOT token_usage.{c}" for c in _TOKEN_UPDATE) + ")",
)
UPSERT_TOOL = upsert_sql("tool_calls", ToolCallRow._fields, ("session_id", "tool_use_id"))
UPSERT_COMPACTION = upsert_sql("compactions", CompactionRow._fields, ("session_id", "boundary_id"))
INSERT_EVENT = upsert_sql("events", EventRow._fields, ("raw_event_id",), update=())
UPSERT_QUARANTINE = upsert_sql("quarantine", QuarantineRow._fields, ("raw_event_id", "reason"), update=("detail",))
UPSERT_CHECKPOINT = upsert_sql("ingest_checkpoints", Checkpoint._fields, ("root", "origin"))
BUMP_STAT = (
    "INSERT INTO ingest_stats (name, value) VALUES (?, ?)"
    " ON CONFLICT (name) DO UPDATE SET value = value + excluded.value"
)


def write_changes(conn: apsw.Connection, ch: Changes, log: apsw.Connection | None = None) -> None:
    """Upsert projection rows (inside the caller's transaction).

    Args:
        conn: the connection written.
        ch: the projector's rows.
        log: the connection whose ``events_raw`` holds the log, when it is not ``conn`` (a rebuild);
            summaries look their leaf up in it (``ingestd.store.titles``). Read-only.
    """
    retitle: set[str] = set()
    if ch.sessions:
        conn.executemany(UPSERT_SESSION, ch.sessions)
        # a session row without a title of its own gets its summary title back (titles.refresh)
        retitle.update(r.id for r in ch.sessions if r.title is None)
    if ch.summaries:
        retitle |= titles.resolve_summaries(log if log is not None else conn, conn, ch.summaries)
    titles.refresh(conn, retitle)
    if ch.retracted_agents:
        conn.executemany(
            "DELETE FROM orchestration_edges WHERE session_id = ? AND child_agent_id = ?", ch.retracted_agents
        )
        conn.executemany("DELETE FROM agents WHERE session_id = ? AND id = ?", ch.retracted_agents)
    for sql, rows in (
        (UPSERT_AGENT, ch.agents),
        (UPSERT_EDGE, ch.edges),
        (UPSERT_TOOL, ch.tool_calls),
        (UPSERT_COMPACTION, ch.compactions),
        (INSERT_EVENT, ch.events),
        (UPSERT_QUARANTINE, ch.quarantine),
    ):
        if rows:
            conn.executemany(sql, rows)
    if ch.token_usage:
        bulk.upsert_token_usage(conn, UPSERT_TOKENS, ch.token_usage)


def write_checkpoints(conn: apsw.Connection, checkpoints: Iterable[Checkpoint]) -> None:
    """Upsert tail checkpoints (inside the caller's transaction)."""
    cps = list(checkpoints)
    if cps:
        conn.executemany(UPSERT_CHECKPOINT, cps)
