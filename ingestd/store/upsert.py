"""Projection upserts (SPEC §4, DESIGN.md "Projections"), inside the caller's write transaction.

Every statement's column list comes from its row type's fields (``ingestd.core.rows``), so the
column order is written once. What differs per table is only the conflict key, the columns an
update replaces and, for ``token_usage``, the claim rule.

The bulk path for large batches: ``upsert_token_usage`` writes a batch's ``token_usage`` rows with
the same upsert as the per-row path (``UPSERT_TOKENS``), but for a batch of ``BULK_MIN_ROWS`` rows or more it
rolls the newly inserted rows up once, grouped, instead of once per row in the trigger (migration
0015): ``rollup_deferred`` marks the ids from which the per-row triggers stand aside, one grouped
``INSERT ... SELECT`` (the scan's grouping, ``ingestd.store.rollup``) adds those rows, and the mark
is removed, all inside the caller's transaction. The rollup ends exactly as the per-row triggers
leave it (proven by the equivalence tests and ``ingestd verify``, which compare it with the scan).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

from ingestd.core.derive import Changes
from ingestd.core.rows import (
    AgentRow,
    CcModelUsageRow,
    Checkpoint,
    CompactionRow,
    EdgeRow,
    EventRow,
    OtelMetricRow,
    OtelRequestRow,
    PromptRow,
    QuarantineRow,
    RateLimitSampleRow,
    SearchDocRow,
    SessionRow,
    TaskRow,
    TokenUsageRow,
)
from ingestd.core.touch import Ctx
from ingestd.store import forks, titles, upsert
from ingestd.store.connection import Db
from ingestd.store.rollup import (
    CANONICAL_SQL,
    KEY_COLUMNS,
    RATE_SQL,
    ROLLUP_COLUMNS,
    ROLLUP_KEY,
    SLOT_SQL,
    SUM_COLUMNS,
    SUMS_SQL,
    TIER_SQL,
)
from ingestd.store.sqlgen import changed_update_sql, upsert_sql

LOCAL = Ctx()  # the identity of a store written without one (tests)
# Indexed columns that seldom change are left out of the upserts' DO UPDATE and assigned after them
# only where they differ (``changed_update_sql``): a hook's commit wrote 17 pages with them, 14 without.
SESSION_SELDOM = ("project_path", "root_uuid", "forked_from", "team_name")
UPSERT_SESSION = upsert_sql("sessions", SessionRow._fields, ("id",), keep=SESSION_SELDOM)
UPDATE_SESSION_SELDOM, _session_seldom = changed_update_sql("sessions", SessionRow._fields, ("id",), SESSION_SELDOM)
# An agent is identified by (session_id, id) (SPEC §4.2, migration 0009): each session's fold
# owns its agents' rows, so a later row of the same session simply replaces the earlier one.
# `evidence_status` is the status the evidence gives (the watchdog may later move `status`).
_AGENT_KEY = ("session_id", "id")
UPSERT_AGENT = upsert_sql(
    "agents",
    AgentRow._fields,
    _AGENT_KEY,
    keep=("parent_agent_id",),
    extra=(("evidence_status", AgentRow._fields.index("status") + 1),),
)
UPDATE_AGENT_PARENT, _agent_parent = changed_update_sql("agents", AgentRow._fields, _AGENT_KEY, ("parent_agent_id",))
# One current edge per child: better evidence corrects the parent in place (SPEC §4.3); the id is
# a function of the key, so it stays.
UPSERT_EDGE = upsert_sql(
    "orchestration_edges",
    EdgeRow._fields,
    ("session_id", "child_agent_id"),
    update=EdgeRow._fields[2:3] + EdgeRow._fields[4:],
)
TOKEN_UPDATE = tuple(f for f in TokenUsageRow._fields if f not in ("id", "message_id"))


# The claim rule (DESIGN.md, ``ingestd.core.state.claim_order``): the incoming claim is the better one.
BETTER_CLAIM = (
    "(excluded.claim_rank > token_usage.claim_rank"
    " OR (excluded.session_id = token_usage.session_id AND excluded.claim_rank = token_usage.claim_rank)"
    " OR (excluded.claim_rank = token_usage.claim_rank AND (excluded.occurred_at < token_usage.occurred_at"
    " OR (excluded.occurred_at = token_usage.occurred_at AND excluded.session_id <= token_usage.session_id))))"
)
# Numbers that are the maximum over every copy of the message, whichever claim owns it (SPEC §4.4).
MAXED = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h", "web_search_requests")


def _greater(c: str) -> str:
    # an integer CASE, not max(): PostgreSQL's max() is an aggregate only; both stores read this text
    return f"CASE WHEN excluded.{c} > token_usage.{c} THEN excluded.{c} ELSE token_usage.{c} END"


def token_upsert(fields: Sequence[str], update: Sequence[str], *, marks: str = "?") -> str:
    """The ``token_usage`` upsert of both stores: the claim rule for who owns a message, the
    per-bucket maximum over every copy for what it used.

    The better claim on a message (``BETTER_CLAIM``: higher claim_rank, then earlier occurred_at,
    then the smaller session id; a session's own claim of the same rank is its fold's current best
    and replaces its earlier one, since an inferred occurred_at can move either way) sets the
    owner's columns: session, agent, model, time, rank, pricing facts (and the central store's
    host). The buckets and web searches take the maximum over every copy written, in any session
    and any order (a partial copy in one file never beats the final one in another), and
    ``prompt_tokens`` follows them. Unchanged rows are not rewritten.

    Args:
        fields: the row type's fields in binding order.
        update: the columns an upsert may change.
        marks: ``?`` (SQLite) or ``%s`` (the central store).
    """
    head = upsert_sql("token_usage", fields, ("message_id",), update=(), marks=marks).removesuffix(" DO NOTHING")
    prompt = " + ".join(_greater(c) for c in ("input", "cache_read", "cache_write_5m", "cache_write_1h"))
    sets = []
    for c in update:
        if c in MAXED:
            sets.append(f"{c} = {_greater(c)}")
        elif c == "prompt_tokens":
            sets.append(f"prompt_tokens = {prompt}")
        else:
            sets.append(f"{c} = CASE WHEN {BETTER_CLAIM} THEN excluded.{c} ELSE token_usage.{c} END")
    owned = [c for c in update if c not in MAXED and c != "prompt_tokens"]
    changed = " OR ".join(f"excluded.{c} IS DISTINCT FROM token_usage.{c}" for c in owned)
    larger = " OR ".join(f"excluded.{c} > token_usage.{c}" for c in MAXED)
    return f"{head} DO UPDATE SET {', '.join(sets)} WHERE ({BETTER_CLAIM} AND ({changed})) OR {larger}"


UPSERT_TOKENS = token_upsert(TokenUsageRow._fields, TOKEN_UPDATE)
UPSERT_COMPACTION = upsert_sql("compactions", CompactionRow._fields, ("session_id", "boundary_id"))
UPSERT_TASK = upsert_sql("tasks", TaskRow._fields, ("session_id", "task_id"))
UPSERT_PROMPT = upsert_sql("prompts", PromptRow._fields, ("session_id", "prompt_id"))
UPSERT_CC_MODEL = upsert_sql("cc_model_usage", CcModelUsageRow._fields, ("session_id", "model"))
INSERT_EVENT = upsert_sql("events", EventRow._fields, ("raw_event_id",), update=())
INSERT_SAMPLE = upsert_sql("rate_limit_samples", RateLimitSampleRow._fields, ("raw_event_id",), update=())
UPSERT_OTEL_REQUEST = upsert_sql("otel_requests", OtelRequestRow._fields, ("session_id", "request_key"))
INSERT_OTEL_METRIC = upsert_sql("otel_metric_points", OtelMetricRow._fields, ("raw_event_id",), update=())
# an event's own usage row, once a transcript message explains the event (ingestd.core.otelfold)
DELETE_OWN_USAGE = "DELETE FROM token_usage WHERE session_id = ? AND message_id = ?"


def utc_ms_sql(param: str) -> str:
    """SQL of how a compact column keeps the time bound as ``param`` (``?7``): integer ms since the
    epoch when it is canonical UTC from 1970 on, which the views spell back exactly (as
    ``log_rows.received``); any other text, or NULL, as it is."""
    ms = (
        f"CASE WHEN {param} GLOB"
        " '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'"
        f" THEN unixepoch(substr({param}, 1, 19)) * 1000 + CAST(substr({param}, 21, 3) AS INTEGER) END"
    )
    return (
        "(SELECT CASE WHEN ms >= 0 AND strftime('%Y-%m-%dT%H:%M:%S', ms / 1000, 'unixepoch') || '.'"
        f" || printf('%03d', ms % 1000) || 'Z' = {param} THEN ms ELSE {param} END FROM (SELECT {ms} AS ms))"
    )


def _code_sql(param: str, names: Sequence[str]) -> str:
    """SQL of the code (its place in ``names``) of the name bound as ``param``; NULL for another."""
    return f"CASE {param} " + " ".join(f"WHEN '{n}' THEN {i}" for i, n in enumerate(names)) + " END"


# the session of a compact table's row, by its log_sessions id (``ENSURE_SESSION`` first)
_SID_OF = "(SELECT id FROM log_sessions WHERE session_id = {})"
# a session in log_sessions: there already in the database whose log folded it, added in a
# rebuild's fresh database
ENSURE_SESSION = (
    "INSERT INTO log_sessions (session_id)"
    " SELECT ?1 WHERE NOT EXISTS (SELECT 1 FROM log_sessions WHERE session_id = ?1)"
)


def ensure_sessions(conn: Db, sids: Iterable[str]) -> None:
    """``ENSURE_SESSION`` for each session, in the order first named (inside the caller's
    transaction): a set's order would follow the process's hash seed, and a rebuild would give the
    same sessions other ids."""
    conn.executemany(ENSURE_SESSION, [(s,) for s in dict.fromkeys(sids)])


# A tool call, bound as ``ToolCallRow``, into tool_call_rows in the compact form the view
# tool_calls spells back exactly (migration 0034): the session as its log_sessions id, the agent as
# 0 when it is the session's own id, the times as ``utc_ms_sql``, the status as its code.
TOOL_STATUS_CODES = ("running", "completed", "failed", "interrupted", "denied")  # 0-4, as the view spells them
UPSERT_TOOL = (
    "INSERT INTO tool_call_rows (sid, tool_use_id, agent_id, tool_name, started, ended, status, prompt_id, reason)"
    f" VALUES ({_SID_OF.format('?1')}, ?2, CASE WHEN ?3 = ?1 THEN 0 ELSE ?3 END, ?4, {utc_ms_sql('?5')},"
    f" {utc_ms_sql('?6')}, {_code_sql('?7', TOOL_STATUS_CODES)}, ?8, ?9)"
    " ON CONFLICT (sid, tool_use_id) DO UPDATE SET "
    + ", ".join(
        f"{c} = excluded.{c}" for c in ("agent_id", "tool_name", "started", "ended", "status", "prompt_id", "reason")
    )
)
# A document's row, its text aside (the index holds it, the log keeps it), bound as
# ``SearchDocRow[:-1]``: new rows' ids come back. It goes into search_doc_rows in the compact form
# the view search_docs spells back exactly (migration 0033): raw_event_id and seq (?2, ?3) are
# doc_id's own parts; the session as its log_sessions id, the kind as its code, the time as
# ``utc_ms_sql``, a lowercase 8-4-4-4-12 uuid as its 16 bytes (any other as its text).
SEARCH_KIND_CODES = ("prompt", "text", "tool", "title", "summary")  # 0-4, as the view spells them
_UUID_GLOB = "-".join("[0-9a-f]" * n for n in (8, 4, 4, 4, 12))
INSERT_SEARCH_DOC = (
    "INSERT INTO search_doc_rows (doc_id, sid, agent_id, kind, at, label, uuid) VALUES ("
    f"?1, {_SID_OF.format('?4')}, ?5, {_code_sql('?6', SEARCH_KIND_CODES)}, {utc_ms_sql('?7')},"
    f" ?8, CASE WHEN ?9 GLOB '{_UUID_GLOB}' THEN unhex(replace(?9, '-', '')) ELSE ?9 END"
    ") ON CONFLICT (doc_id) DO NOTHING RETURNING doc_id"
)
INDEX_SEARCH_TEXT = "INSERT INTO search_fts (rowid, text) VALUES (?, ?)"
# every index entry at once (a contentless index deletes nothing else without the entry's text)
CLEAR_SEARCH_INDEX = "INSERT INTO search_fts (search_fts) VALUES ('delete-all')"
UPSERT_QUARANTINE = upsert_sql("quarantine", QuarantineRow._fields, ("raw_event_id", "reason"), update=("detail",))
UPSERT_CHECKPOINT = upsert_sql("ingest_checkpoints", Checkpoint._fields, ("root", "origin"))
BUMP_STAT = (
    "INSERT INTO ingest_stats (name, value) VALUES (?, ?)"
    " ON CONFLICT (name) DO UPDATE SET value = value + excluded.value"
)


def write_changes(conn: Db, ch: Changes, log: Db | None = None, ctx: Ctx = LOCAL) -> None:
    """Upsert projection rows (inside the caller's transaction), then the fork edges those rows can
    change (``ingestd.store.forks``: a join of several sessions' rows, not one session's fold).

    Args:
        conn: the connection written.
        ch: the projector's rows.
        log: the connection whose ``events_raw`` holds the log, when it is not ``conn`` (a rebuild);
            summaries look their leaf up in it (``ingestd.store.titles``). Read-only.
        ctx: the database's identity, stamped on the fork edges (as the fold stamps its own edges).
    """
    retitle: set[str] = set()
    same: set[str] = set()  # sessions whose upsert leaves every fork input as stored
    if ch.sessions:
        # read before the upsert; only without a write that moves another input a parent answer
        # reads (compactions, retracted agents)
        if not (ch.compactions or ch.retracted_compactions or ch.retracted_agents):
            same = forks.settled(conn, ch.sessions)
        conn.executemany(UPSERT_SESSION, ch.sessions)
        conn.executemany(UPDATE_SESSION_SELDOM, [_session_seldom(r) for r in ch.sessions])
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
    if ch.retracted_compactions:
        conn.executemany("DELETE FROM compactions WHERE session_id = ? AND boundary_id = ?", ch.retracted_compactions)
    if ch.tool_calls:
        ensure_sessions(conn, (r.session_id for r in ch.tool_calls))
    if ch.agents:
        conn.executemany(UPSERT_AGENT, ch.agents)
        conn.executemany(UPDATE_AGENT_PARENT, [_agent_parent(r) for r in ch.agents])
    for sql, rows in (
        (UPSERT_EDGE, ch.edges),
        (UPSERT_TOOL, ch.tool_calls),
        (UPSERT_COMPACTION, ch.compactions),
        (UPSERT_TASK, ch.tasks),
        (UPSERT_PROMPT, ch.prompts),
        (UPSERT_CC_MODEL, ch.cc_model_usage),
        (INSERT_EVENT, ch.events),
        (INSERT_SAMPLE, ch.rate_limit_samples),
        (UPSERT_QUARANTINE, ch.quarantine),
        (UPSERT_OTEL_REQUEST, ch.otel_requests),
        (INSERT_OTEL_METRIC, ch.otel_metrics),
        (DELETE_OWN_USAGE, ch.retracted_usage),
    ):
        if rows:
            conn.executemany(sql, rows)
    if ch.token_usage:
        upsert.upsert_token_usage(conn, UPSERT_TOKENS, ch.token_usage)
    if ch.search_docs:
        index_search_docs(conn, ch.search_docs)
    moved = {r.id for r in ch.sessions if r.id not in same} | {r.session_id for r in ch.compactions}
    if moved:
        forks.refresh(conn, moved, ctx)


def index_search_docs(conn: Db, docs: Sequence[SearchDocRow]) -> None:
    """Insert the documents not stored yet, and their text into the full-text index (inside the
    caller's transaction). A document stored already is left as it is (it is a pure function of
    its log row: the same row gives the same document).

    The text goes in by ascending ``doc_id`` (the index's rowid), whatever order the fold gave:
    FTS5 writes out its pending terms as a new segment whenever a rowid is not above the previous
    one in the transaction, so a session folded newest first (``replay``'s reversed rebuild) wrote
    a segment per document and merged them again."""
    docs = sorted(docs, key=attrgetter("doc_id"))
    text = {d.doc_id: d.text for d in docs}
    ensure_sessions(conn, (d.session_id for d in docs))
    fresh = [(i, text[i]) for (i,) in conn.executemany(INSERT_SEARCH_DOC, [d[:-1] for d in docs])]
    if fresh:
        conn.executemany(INDEX_SEARCH_TEXT, fresh)


def write_checkpoints(conn: Db, checkpoints: Iterable[Checkpoint]) -> None:
    """Upsert tail checkpoints (inside the caller's transaction)."""
    cps = list(checkpoints)
    if cps:
        conn.executemany(UPSERT_CHECKPOINT, cps)


# Below this many rows the per-row triggers are cheaper than the extra statements (a hook, a tail).
BULK_MIN_ROWS = 256

# The mark: the id the batch's first new row will get (ids are max(id) + 1), read in the same statement.
MARK = "INSERT INTO rollup_deferred (one, from_id) SELECT 1, coalesce(max(id), 0) + 1 FROM token_usage"
# Every row inserted since the mark (exactly the batch's new rows), grouped like the scan and
# added to what the rollup holds for older rows.
ROLLUP_SINCE = (
    f"INSERT INTO token_usage_rollup ({ROLLUP_COLUMNS})"
    f" SELECT t.session_id, t.model, {SLOT_SQL}, {RATE_SQL}, {TIER_SQL}, t.speed, t.inference_geo, {SUMS_SQL}"
    " FROM token_usage t WHERE t.id >= (SELECT from_id FROM rollup_deferred)"
    f" AND {CANONICAL_SQL}"
    f" GROUP BY {', '.join(str(i) for i in range(1, len(KEY_COLUMNS) + 1))}"
    f" ON CONFLICT ({ROLLUP_KEY}) DO UPDATE SET " + ", ".join(f"{c} = {c} + excluded.{c}" for c in SUM_COLUMNS)
)


def upsert_token_usage(conn: Db, upsert_sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Upsert ``rows`` (``derive.Changes.token_usage`` tuples) with ``upsert_sql``; inside a write transaction.

    Args:
        conn: a migrated connection (migration 0015), in the caller's transaction.
        upsert_sql: the per-row upsert (``ingestd.store.upsert.UPSERT_TOKENS``).
        rows: the rows, in order (later rows of a key win as the upsert decides).

    Side effects: ``token_usage`` and ``token_usage_rollup`` as the per-row triggers would leave
    them; ``rollup_deferred`` is empty again on return.

    Raises:
        apsw.Error: as the per-row statements would (the caller's transaction rolls back).
    """
    if len(rows) < BULK_MIN_ROWS:
        conn.executemany(upsert_sql, rows)
        return
    conn.execute(MARK)
    conn.executemany(upsert_sql, rows)
    conn.execute(ROLLUP_SINCE)
    conn.execute("DELETE FROM rollup_deferred")
