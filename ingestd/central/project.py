"""``ingestd project --store``: the same pure projector folds the central log (SPEC §13).

Incremental and resumable: ``projector_progress.projected_through`` is the central
``events_raw.id`` through which every row is folded, moved in the same transaction as the
projection rows it produced. A run takes the next slice of the log past it, finds the sessions
the slice touches and re-folds each of them from all of its rows so far (any host), writing the
full rows: the projector's order independence makes that equal to any incremental fold, and it
needs no fold state kept between runs or machines.

A session whose rows the store refuses (``REFUSALS``: a value, a constraint, a size) is folded in a
savepoint and rolled back alone, with a ``storage`` quarantine row (``fold_isolated``), so it never
stops the projection of another session or host. The projector's rows are ``storable``
(``ingestd.core.storable``), so text SQLite takes and PostgreSQL does not never gets that far.

Safe to run from several machines at once: every slice's transaction first takes a
transaction-scoped advisory lock (``PROJECT_LOCK``), so slices are folded one at a time and a
killed run rolls back to the previous mark.

One session, several hosts (a session resumed on another machine, or a copied transcript): the
rows of every host are folded into one state, in host order, with each host's identity as the
context of its slice (edges carry the ``host_id`` / ``instance`` of the host whose rows derived
them). Dedup is the one-machine rule (one row per ``message.id``, the better claim wins).
``token_usage.host_id`` is the host whose own log holds the best claim on it (the direct record over another host's
``agent_progress`` copy; the smaller host id between equal claims), so ``cost --by host`` splits
hosts with disjoint messages exactly as their local databases do, and counts a message two hosts
hold once, under the host with the better evidence.

Status: each session's watchdog ``as_of`` is the newest log time of the hosts that logged it
(``hosts.log_as_of``, with that host's window), so a session seen by one host gets the status
its own machine gives it.

In each slice's transaction of ``project_store``: the central watchdog pass (``watchdog``:
``ingestd.store.watchdog_pass.watchdog_pass`` per session, with the ``as_of`` and window of the hosts
that logged it, ``hosts.log_as_of``, ``hosts.watchdog_window_s``) and titles from summaries
(``resolve_titles``: the central form of ``ingestd.store.titles``, SPEC §4.1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import psycopg
from psycopg import errors as pgerr

from ingestd.central.migrate import migrate
from ingestd.central.pg import PgReadConn, pg_errors
from ingestd.core import derive, projector
from ingestd.core.blocks import best_leaf, leaf_claim
from ingestd.core.projector import decode_row
from ingestd.core.records import LogRow
from ingestd.core.revision import PROJECTION_REVISION
from ingestd.core.rows import (
    AgentRow,
    CcModelUsageRow,
    CompactionRow,
    EdgeRow,
    EventRow,
    OtelMetricRow,
    OtelRequestRow,
    PromptRow,
    QuarantineRow,
    RateLimitSampleRow,
    SessionRow,
    SummaryRow,
    TaskRow,
    TokenUsageRow,
    ToolCallRow,
)
from ingestd.core.state import SessionState, claim_order
from ingestd.core.storable import storable
from ingestd.core.touch import Ctx
from ingestd.core.validate import STORAGE
from ingestd.core.watchdog import WATCHDOG_WINDOW_S, watchdog_cutoff
from ingestd.errors import ConfigError
from ingestd.logs import get_logger
from ingestd.store import forks
from ingestd.store.sqlgen import upsert_sql
from ingestd.store.upsert import TOKEN_UPDATE, token_upsert

log = get_logger("ingestd.central.project")

PROJECT_LOCK = 0x696E6765_7374_02
DEFAULT_BATCH_ROWS = 20_000
LOG_COLUMNS = "id, source, event_type, payload, received_at, session_id, origin, origin_gen, origin_offset"
PROJECTION_TABLES = (
    "sessions",
    "session_hosts",
    "agents",
    "orchestration_edges",
    "token_usage",
    "token_usage_rollup",
    "tool_calls",
    "compactions",
    "tasks",
    "prompts",
    "cc_model_usage",
    "events",
    "rate_limit_samples",
    "otel_requests",
    "otel_metric_points",
    "summaries",
    "quarantine",
)

# The local store's upserts (``ingestd.store.upsert``, built from the row types' fields), with the
# host column a central row carries: the host whose slice wrote it.
UPSERT_SESSION = upsert_sql("sessions", SessionRow._fields, ("id",), marks="%s")
# Agents are keyed by (session_id, id) here: no claim between sessions is needed. ``evidence_status``
# is bound from ``status`` (after the fields: ``_agent_params``).
UPSERT_AGENT = upsert_sql(
    "agents",
    AgentRow._fields,
    ("session_id", "id"),
    extra=(("evidence_status", AgentRow._fields.index("status") + 1),),
    marks="%s",
)
UPSERT_EDGE = upsert_sql(
    "orchestration_edges",
    EdgeRow._fields,
    ("session_id", "child_agent_id"),
    update=EdgeRow._fields[2:3] + EdgeRow._fields[4:],
    marks="%s",
)
# The one claim rule and the per-bucket maximum over copies (``ingestd.store.upsert.token_upsert``);
# host_id travels with the claim (``fold_session``).
_TOKEN_COLUMNS = ("host_id", *TokenUsageRow._fields[1:])
_TOKEN_UPDATE = ("host_id", *TOKEN_UPDATE)
UPSERT_TOKENS = token_upsert(_TOKEN_COLUMNS, _TOKEN_UPDATE, marks="%s")
UPSERT_TOOL = upsert_sql("tool_calls", ToolCallRow._fields, ("session_id", "tool_use_id"), marks="%s")
UPSERT_COMPACTION = upsert_sql("compactions", CompactionRow._fields, ("session_id", "boundary_id"), marks="%s")
UPSERT_TASK = upsert_sql("tasks", TaskRow._fields, ("session_id", "task_id"), marks="%s")
UPSERT_PROMPT = upsert_sql("prompts", PromptRow._fields, ("session_id", "prompt_id"), marks="%s")
UPSERT_CC_MODEL = upsert_sql("cc_model_usage", CcModelUsageRow._fields, ("session_id", "model"), marks="%s")
INSERT_EVENT = upsert_sql(
    "events", ("raw_event_id", "host_id", *EventRow._fields[1:]), ("raw_event_id",), update=(), marks="%s"
)
INSERT_SAMPLE = upsert_sql(
    "rate_limit_samples",
    ("raw_event_id", "host_id", *RateLimitSampleRow._fields[1:]),
    ("raw_event_id",),
    update=(),
    marks="%s",
)
UPSERT_OTEL_REQUEST = upsert_sql(
    "otel_requests",
    (*OtelRequestRow._fields[:2], "host_id", *OtelRequestRow._fields[2:]),
    ("session_id", "request_key"),
    marks="%s",
)
INSERT_OTEL_METRIC = upsert_sql(
    "otel_metric_points",
    ("raw_event_id", "host_id", *OtelMetricRow._fields[1:]),
    ("raw_event_id",),
    update=(),
    marks="%s",
)
UPSERT_QUARANTINE = upsert_sql(
    "quarantine",
    ("raw_event_id", "reason", "host_id", *QuarantineRow._fields[2:]),
    ("raw_event_id", "reason"),
    update=("detail",),
    marks="%s",
)
UPSERT_SUMMARY = upsert_sql(
    "summaries",
    ("host_id", *SummaryRow._fields),
    ("host_id", "origin", "origin_gen", "origin_offset"),
    update=(),
    marks="%s",
)


@dataclass(frozen=True, slots=True)
class ProjectResult:
    """What one ``project_store`` run did.

    Attributes:
        slices: int, transactions committed.
        log_rows: int, new central log rows covered.
        sessions: int, session re-folds (a session touched by two slices counts twice).
        projected_through: int, the central log id every row up to which is folded.
        reprojected: bool, the projection rules changed and everything was re-folded.
    """

    slices: int
    log_rows: int
    sessions: int
    projected_through: int
    reprojected: bool

    def to_json(self) -> dict[str, Any]:
        """JSON shape: every field by name."""
        return dataclasses.asdict(self)


def _payload(v: Any) -> bytes:
    return bytes(v) if not isinstance(v, bytes) else v


def _agent_params(r: AgentRow) -> tuple[Any, ...]:
    return (*r, r.status)


def write_changes(
    pg: psycopg.Connection[Any],
    sid: str,
    host_id: str,
    ch: derive.Changes,
    owner: dict[str, str] | None = None,
) -> None:
    """Upsert one host slice's projection rows (inside the caller's transaction).

    Args:
        owner: message_id -> the host a usage row is attributed to (default ``host_id``).
    """
    owner = owner or {}
    with pg.cursor() as cur:
        if ch.sessions:
            cur.executemany(UPSERT_SESSION, ch.sessions)
        if ch.retracted_agents:
            cur.executemany(
                "DELETE FROM orchestration_edges WHERE session_id = %s AND child_agent_id = %s", ch.retracted_agents
            )
            cur.executemany("DELETE FROM agents WHERE session_id = %s AND id = %s", ch.retracted_agents)
        if ch.agents:
            cur.executemany(UPSERT_AGENT, [_agent_params(r) for r in ch.agents])
        if ch.edges:
            cur.executemany(UPSERT_EDGE, ch.edges)
        if ch.retracted_usage:
            cur.executemany("DELETE FROM token_usage WHERE session_id = %s AND message_id = %s", ch.retracted_usage)
        if ch.token_usage:
            cur.executemany(UPSERT_TOKENS, [(owner.get(r.message_id, host_id), *r[1:]) for r in ch.token_usage])
        if ch.tool_calls:
            cur.executemany(UPSERT_TOOL, ch.tool_calls)
        if ch.retracted_compactions:
            cur.executemany(
                "DELETE FROM compactions WHERE session_id = %s AND boundary_id = %s", ch.retracted_compactions
            )
        if ch.compactions:
            cur.executemany(UPSERT_COMPACTION, ch.compactions)
        if ch.tasks:
            cur.executemany(UPSERT_TASK, ch.tasks)
        if ch.prompts:
            cur.executemany(UPSERT_PROMPT, ch.prompts)
        if ch.cc_model_usage:
            cur.executemany(UPSERT_CC_MODEL, ch.cc_model_usage)
        if ch.events:
            cur.executemany(INSERT_EVENT, [(r[0], host_id, *r[1:]) for r in ch.events])
        if ch.rate_limit_samples:
            cur.executemany(INSERT_SAMPLE, [(r[0], host_id, *r[1:]) for r in ch.rate_limit_samples])
        if ch.otel_requests:
            cur.executemany(UPSERT_OTEL_REQUEST, [(r[0], r[1], host_id, *r[2:]) for r in ch.otel_requests])
        if ch.otel_metrics:
            cur.executemany(INSERT_OTEL_METRIC, [(r[0], host_id, *r[1:]) for r in ch.otel_metrics])
        if ch.quarantine:
            cur.executemany(UPSERT_QUARANTINE, [(r[0], r[1], host_id, *r[2:]) for r in ch.quarantine])
        if ch.summaries:
            cur.executemany(UPSERT_SUMMARY, [(host_id, *r) for r in ch.summaries])


def _best_hosts(sid: str, by_host: dict[str, list[LogRow]], hosts: dict[str, Ctx]) -> dict[str, str]:
    """message_id -> the host whose own log holds the best claim on it (the claim order,
    ``claim_order``, with the host id as the last tie-break). Each host's rows are folded alone to
    find its own claim."""
    best: dict[str, tuple[int, str, str]] = {}
    for h, rows in by_host.items():
        _, solo = projector.fold_log(sid, rows, hosts[h])
        for r in solo.token_usage:
            key = r.message_id
            cand = claim_order(r.claim_rank, r.occurred_at, h)
            if key not in best or cand < best[key]:
                best[key] = cand
    return {k: v[2] for k, v in best.items()}


def fold_session(pg: psycopg.Connection[Any], sid: str, through: int, hosts: dict[str, Ctx]) -> int:
    """Re-fold one session from all of its central rows with ``id <= through`` and write its rows.

    Every host's rows go into one fold state (the one-machine dedup rules), slice by slice in host
    order, each slice with its host's identity as the context. A message's ``token_usage.host_id``
    is the host whose own rows hold the best claim on it (``_best_hosts``; the only host when one).

    Returns:
        int, log rows folded.
    """
    by_host: dict[str, list[LogRow]] = {}
    cur = pg.execute(
        f"SELECT host_id, {LOG_COLUMNS} FROM events_raw WHERE session_id = %s AND id <= %s ORDER BY host_id, id",
        (sid, through),
    )
    n = 0
    for r in cur.fetchall():
        by_host.setdefault(str(r[0]), []).append(LogRow(r[1], r[2], r[3], _payload(r[4]), r[5], r[6], r[7], r[8], r[9]))
        n += 1
    owner = _best_hosts(sid, by_host, hosts) if len(by_host) > 1 else {}
    state: SessionState | None = None
    so_far: list[LogRow] = []
    for h, rows in by_host.items():
        so_far.extend(rows)
        # a refold (``SessionState.needs_refold``) folds every host's rows read so far again
        state, ch = projector.fold(state, sid, rows, hosts[h], projector.given(tuple(so_far)))
        write_changes(pg, sid, h, ch, owner)
        pg.execute("INSERT INTO session_hosts (session_id, host_id) VALUES (%s, %s) ON CONFLICT DO NOTHING", (sid, h))
    refresh_forks(pg, [sid], hosts)
    return n


def refresh_forks(pg: psycopg.Connection[Any], sids: list[str], hosts: dict[str, Ctx]) -> None:
    """The central form of ``ingestd.store.forks.refresh``: the fork edges of ``forks.affected(sids)``
    made what ``forks.wanted`` says, each stamped with the identity of the smallest host holding
    rows of the fork's session (``session_hosts``), whatever host's slice or fold order got there
    first. In the caller's transaction."""
    q = PgReadConn(pg)
    for child, want in forks.wanted(q, forks.affected(q, sids)).items():
        if want is None:
            pg.execute(
                "DELETE FROM orchestration_edges WHERE session_id = %s AND child_agent_id = %s AND source = 'fork'",
                (child, child),
            )
            continue
        own = pg.execute("SELECT min(host_id) FROM session_hosts WHERE session_id = %s", (child,)).fetchone()
        ctx = hosts.get(str(own[0])) if own is not None and own[0] is not None else None
        pg.execute(UPSERT_EDGE, forks.edge_row(child, want[0], want[1], ctx or Ctx(instance="central", host_id="")))


# What the store refuses for a reason in the rows themselves (a value, a constraint, a size limit),
# never a connection or a lock: folded again it would be refused again.
REFUSALS: tuple[type[BaseException], ...] = (psycopg.DataError, psycopg.IntegrityError, pgerr.ProgramLimitExceeded)
REFUSED_DETAIL = "the central store refused the session's projection: "
_NEWEST = (
    "SELECT id, host_id, origin, origin_offset FROM events_raw WHERE session_id = %s AND id <= %s"
    " ORDER BY id DESC LIMIT 1"
)


def fold_isolated(pg: psycopg.Connection[Any], sid: str, through: int, hosts: dict[str, Ctx]) -> bool:
    """``fold_session`` in a savepoint: a session whose rows the store refuses (``REFUSALS``) keeps
    its rows as they were and gets a ``storage`` quarantine row naming the refusal (on its newest log
    row, which ``status --store`` lists), logged, and the slice goes on: one poisoned session never
    stops another session or host. Any other error propagates (the slice rolls back).

    Returns:
        bool, whether the session was folded.
    """
    try:
        with pg.transaction():
            fold_session(pg, sid, through, hosts)
        return True
    except REFUSALS as e:
        detail = REFUSED_DETAIL + (str(e).strip().splitlines() or [type(e).__name__])[0]
        log.warning("central_session_refused", session_id=sid, through=through, error=detail)
    newest = pg.execute(_NEWEST, (sid, through)).fetchone()
    if newest is not None:
        pg.execute(UPSERT_QUARANTINE, (newest[0], STORAGE, newest[1], sid, newest[2], newest[3], storable(detail)))
    return False


def _hosts(pg: psycopg.Connection[Any]) -> dict[str, Ctx]:
    return {str(h): Ctx(instance=str(i), host_id=str(h)) for h, i in pg.execute("SELECT host_id, instance FROM hosts")}


def _reset_if_rules_changed(pg: psycopg.Connection[Any]) -> bool:
    """Empty the projections when they were folded under other projector rules. In the caller's txn."""
    row = pg.execute("SELECT projected_through, projection_revision FROM projector_progress FOR UPDATE").fetchone()
    assert row is not None
    if row[1] == str(PROJECTION_REVISION):
        return False
    changed = int(row[0]) > 0
    if changed:
        # TRUNCATE fires no row triggers: the rollup is emptied with its source, so they stay equal.
        pg.execute("TRUNCATE " + ", ".join(PROJECTION_TABLES))
    pg.execute(
        "UPDATE projector_progress SET projected_through = 0, projection_revision = %s", (str(PROJECTION_REVISION),)
    )
    return changed


def _fold_slice(pg: psycopg.Connection[Any], mark: int, batch_rows: int, reverse: bool) -> tuple[int, int, int] | None:
    """Fold the next slice past ``mark`` in the caller's transaction and move the mark.

    Returns:
        ``(through, log rows, sessions)`` of the slice; None when nothing is past ``mark``.
    """
    top = pg.execute(
        "SELECT max(id), count(*) FROM (SELECT id FROM events_raw WHERE id > %s ORDER BY id LIMIT %s) s",
        (mark, batch_rows),
    ).fetchone()
    if top is None or top[0] is None:
        return None
    through, new = int(top[0]), int(top[1])
    sids = [
        str(r[0])
        for r in pg.execute(
            "SELECT DISTINCT session_id FROM events_raw WHERE id > %s AND id <= %s"
            " AND session_id IS NOT NULL ORDER BY 1" + (" DESC" if reverse else ""),
            (mark, through),
        )
    ]
    hosts = _hosts(pg)
    for sid in sids:
        fold_isolated(pg, sid, through, hosts)
    resolve_titles(pg, mark, through, sids)
    watchdog(pg)
    pg.execute("UPDATE projector_progress SET projected_through = %s", (through,))
    return through, new, len(sids)


def project_store(
    pg: psycopg.Connection[Any],
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    on_slice: Callable[[int, int], None] | None = None,
    reverse: bool = False,
) -> ProjectResult:
    """Fold every central log row not folded yet, one slice (``batch_rows`` log rows) per transaction.

    Args:
        pg: a central store connection (not autocommit); migrated here when behind.
        batch_rows: int, new log rows per slice.
        on_slice: called with (log rows, sessions) of each committed slice (progress).
        reverse: fold a slice's sessions in descending id order (replay's second order).

    Returns:
        ``ProjectResult``.

    Raises:
        MigrationError: the central ledger refuses.
        StorageError: the store refused; committed slices stay, with their mark.
    """
    migrate(pg)
    slices = rows = sessions = 0
    reprojected = False
    while True:
        with pg_errors(), pg.transaction():
            pg.execute("SELECT pg_advisory_xact_lock(%s)", (PROJECT_LOCK,))
            if batch_rows < 1:
                raise ConfigError("project batch size must be at least 1 row")
            reprojected = _reset_if_rules_changed(pg) or reprojected
            got = pg.execute("SELECT projected_through FROM projector_progress").fetchone()
            mark = int(got[0]) if got else 0
            folded = _fold_slice(pg, mark, batch_rows, reverse)
            if folded is None:
                through = mark
                if slices == 0:
                    watchdog(pg)  # a host's newer rows may have no session but move its as_of
                break
            through, new, n_sessions = folded
        slices += 1
        rows += new
        sessions += n_sessions
        if on_slice is not None:
            on_slice(new, n_sessions)
    return ProjectResult(slices, rows, sessions, through, reprojected)


_CUT = (
    "CREATE TEMP TABLE watchdog_cut ON COMMIT DROP AS"
    " SELECT sh.session_id, max(h.cutoff) AS cutoff FROM session_hosts sh"
    " JOIN (SELECT unnest(%s::text[]) AS host_id, unnest(%s::text[]) AS cutoff) h ON h.host_id = sh.host_id"
    " GROUP BY sh.session_id"
)
_ALIVE = (
    "WITH RECURSIVE alive(session_id, id) AS ("
    " SELECT a.session_id, a.id FROM agents a JOIN watchdog_cut c ON c.session_id = a.session_id"
    " WHERE a.status IN ('working', 'waiting') AND a.last_seen_at >= c.cutoff"
    " UNION SELECT a.session_id, a.parent_agent_id FROM agents a JOIN alive"
    " ON a.session_id = alive.session_id AND a.id = alive.id WHERE a.parent_agent_id IS NOT NULL) "
)
_IDLE = (
    "UPDATE agents a SET status = 'unknown' FROM watchdog_cut c WHERE c.session_id = a.session_id"
    " AND a.status IN ('working', 'waiting') AND a.last_seen_at < c.cutoff"
    " AND NOT EXISTS (SELECT 1 FROM alive WHERE alive.session_id = a.session_id AND alive.id = a.id)"
)
_BACK = (
    "UPDATE agents a SET status = a.evidence_status WHERE a.status = 'unknown'"
    " AND a.evidence_status IN ('working', 'waiting')"
    " AND EXISTS (SELECT 1 FROM alive WHERE alive.session_id = a.session_id AND alive.id = a.id)"
)
_IDLE_SESSIONS = (
    "UPDATE sessions s SET status = 'unknown' FROM watchdog_cut c WHERE c.session_id = s.id"
    " AND s.status IN ('working', 'waiting') AND s.last_activity_at < c.cutoff"
)


def watchdog(pg: psycopg.Connection[Any]) -> int:
    """The watchdog pass of ``ingestd.store.watchdog_pass.watchdog_pass``, per session with its hosts' ``as_of``.

    Call inside a transaction. Returns the agents moved to ``unknown``.
    """
    hosts: list[str] = []
    cutoffs: list[str] = []
    for h, as_of, window in pg.execute("SELECT host_id, log_as_of, watchdog_window_s FROM hosts"):
        cut = watchdog_cutoff(as_of, int(window or WATCHDOG_WINDOW_S)) if isinstance(as_of, str) else None
        if cut is not None:
            hosts.append(str(h))
            cutoffs.append(cut)
    pg.execute(_CUT, (hosts, cutoffs))
    n = pg.execute(_ALIVE + _IDLE).rowcount
    pg.execute(_ALIVE + _BACK)
    pg.execute(_IDLE_SESSIONS)
    pg.execute("DROP TABLE watchdog_cut")
    return n


# The title of a session with no title of its own: its latest summary (ingestd.store.titles._REFRESH;
# then the host id, between two hosts' copies of one file).
_REFRESH = (
    "UPDATE sessions SET title = s.summary, title_source = CASE WHEN s.summary IS NULL THEN NULL ELSE 'summary' END"
    " FROM (SELECT u.sid, (SELECT m.summary FROM summaries m WHERE m.leaf_session = u.sid"
    "   ORDER BY m.leaf_at DESC, m.origin DESC, m.origin_gen DESC, m.origin_offset DESC, m.host_id DESC LIMIT 1)"
    "   AS summary FROM unnest(%s::text[]) AS u(sid)) AS s"
    " WHERE sessions.id = s.sid AND (sessions.title_source IS NULL OR sessions.title_source = 'summary')"
    " AND (sessions.title IS DISTINCT FROM s.summary OR sessions.title_source IS DISTINCT FROM"
    "   CASE WHEN s.summary IS NULL THEN NULL ELSE 'summary' END)"
)

_SLICE_SUMMARIES = (
    "SELECT m.host_id, m.origin, m.origin_gen, m.origin_offset, m.leaf_uuid, m.leaf_session, m.leaf_at"
    " FROM summaries m WHERE (m.host_id, m.origin) IN (SELECT DISTINCT e.host_id, e.origin FROM events_raw e"
    " WHERE e.id > %s AND e.id <= %s AND e.source = 'jsonl')"
)
_LEAF_ROWS = (
    "SELECT session_id, payload, received_at FROM events_raw WHERE host_id = %s AND origin = %s"
    " AND source = 'jsonl' AND id <= %s AND session_id IS NOT NULL AND position(%s::bytea in payload) > 0"
)


def resolve_titles(pg: psycopg.Connection[Any], mark: int, through: int, sids: list[str]) -> None:
    """Join summaries to their leaf's session and give untitled sessions their summary title.

    The central form of ``ingestd.store.titles`` (SPEC §4.1): every summary of a file (of one host)
    that the slice ``(mark, through]`` added rows to gets, as its leaf, the smallest (session id,
    record time) among the records of that file whose ``uuid`` is its ``leaf_uuid`` (the log through
    ``through``; the same minimum the local store reaches in any arrival order). Then every session
    the slice re-folded or whose summaries moved gets ``titles.refresh``'s title. In the caller's
    transaction.
    """
    retitle = set(sids)
    for h, origin, gen, offset, leaf, old, old_at in pg.execute(_SLICE_SUMMARIES, (mark, through)).fetchall():
        best = best_leaf(
            leaf_claim(
                decode_row(LogRow(0, "jsonl", "", bytes(payload), str(received_at), sid, origin)),
                str(sid),
                str(received_at),
                leaf,
            )
            for sid, payload, received_at in pg.execute(
                _LEAF_ROWS, (h, origin, through, b'"uuid":' + orjson.dumps(leaf))
            ).fetchall()
        )
        if best is not None and best != (old, old_at):
            pg.execute(
                "UPDATE summaries SET leaf_session = %s, leaf_at = %s"
                " WHERE host_id = %s AND origin = %s AND origin_gen = %s AND origin_offset = %s",
                (best[0], best[1], h, origin, gen, offset),
            )
            retitle.add(best[0])
            if old is not None:
                retitle.add(str(old))
    if retitle:
        pg.execute(_REFRESH, (sorted(retitle),))
