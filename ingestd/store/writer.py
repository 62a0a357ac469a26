"""The one write path for log rows and their projections (DESIGN.md, SPEC §3, §4, §7).

``apply_batch`` is used by ``ingestd ingest`` and by the daemon (hook receiver, tailer):
inside one ``BEGIN IMMEDIATE`` transaction it appends the log rows (skipping keys already
present), folds the newly inserted rows through the pure projector per session, upserts the
projection rows, writes the tail checkpoints and runs the watchdog pass.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import apsw
import orjson

from ingestd.core import derive, project
from ingestd.core.records import LogRow, NewLogRow
from ingestd.core.state import SessionState
from ingestd.core.timefmt import format_utc, parse
from ingestd.core.touch import Ctx
from ingestd.core.validate import refold_state
from ingestd.logs import get_logger
from ingestd.store import bulk, titles
from ingestd.store.connection import write_txn

log = get_logger("ingestd.store.writer")

WATCHDOG_WINDOW_S = 600
LOG_COLUMNS = "id, source, event_type, payload, received_at, session_id, origin, origin_gen, origin_offset"

INSERT_LOG = (
    "INSERT INTO events_raw (idempotency_key, source, event_type, payload, received_at, session_id,"
    " origin, origin_gen, origin_offset) VALUES (?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT (idempotency_key) DO NOTHING"
)
UPSERT_SESSION = (
    "INSERT INTO sessions (id, project_slug, project_path, started_at, last_activity_at, status, git_branch,"
    " cc_version, title, slug, entrypoint, end_reason, title_source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT (id) DO UPDATE SET project_slug=excluded.project_slug, project_path=excluded.project_path,"
    " started_at=excluded.started_at, last_activity_at=excluded.last_activity_at, status=excluded.status,"
    " git_branch=excluded.git_branch, cc_version=excluded.cc_version, title=excluded.title,"
    " slug=excluded.slug, entrypoint=excluded.entrypoint, end_reason=excluded.end_reason,"
    " title_source=excluded.title_source"
)
# An agent is identified by (session_id, id) (SPEC §4.2, migration 0009): each session's fold
# owns its agents' rows, so a later row of the same session simply replaces the earlier one.
UPSERT_AGENT = (
    "INSERT INTO agents (id, session_id, type, subagent_type, status, parent_agent_id, first_seen_at,"
    " last_seen_at, outcome_cause, is_compaction, description, evidence_status)"
    " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?5)"
    " ON CONFLICT (session_id, id) DO UPDATE SET type=excluded.type,"
    " subagent_type=excluded.subagent_type, status=excluded.status, evidence_status=excluded.evidence_status,"
    " parent_agent_id=excluded.parent_agent_id,"
    " first_seen_at=excluded.first_seen_at, last_seen_at=excluded.last_seen_at,"
    " outcome_cause=excluded.outcome_cause, is_compaction=excluded.is_compaction,"
    " description=excluded.description"
)
# One current edge per child: better evidence corrects the parent in place (SPEC §4.3).
UPSERT_EDGE = (
    "INSERT INTO orchestration_edges (id, session_id, parent_agent_id, child_agent_id, source, instance,"
    " host_id, created_at, tool_use_id) VALUES (?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT (session_id, child_agent_id) DO UPDATE SET parent_agent_id=excluded.parent_agent_id,"
    " source=excluded.source, instance=excluded.instance, host_id=excluded.host_id,"
    " created_at=excluded.created_at, tool_use_id=excluded.tool_use_id"
)
# The better claim on a message wins whatever the order sessions are folded in (DESIGN.md):
# higher claim_rank, then earlier occurred_at, then the smaller session id. A session's own
# claims only improve in that order, so its later rows replace its earlier ones.
UPSERT_TOKENS = (
    "INSERT INTO token_usage (id, session_id, agent_id, message_id, model, bucket, tokens,"
    " is_compaction_baseline, occurred_at, claim_rank, prompt_tokens, speed, web_search_requests)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT (message_id, bucket) DO UPDATE SET session_id=excluded.session_id,"
    " agent_id=excluded.agent_id, model=excluded.model, tokens=excluded.tokens,"
    " is_compaction_baseline=excluded.is_compaction_baseline, occurred_at=excluded.occurred_at,"
    " claim_rank=excluded.claim_rank, prompt_tokens=excluded.prompt_tokens, speed=excluded.speed,"
    " web_search_requests=excluded.web_search_requests"
    # a session's own claim is its fold's current best: it replaces its earlier one (an inferred
    # occurred_at, ingestd.core.validate, can move either way as the file's timestamps arrive)
    " WHERE (excluded.claim_rank > token_usage.claim_rank"
    "   OR (excluded.session_id = token_usage.session_id AND excluded.claim_rank = token_usage.claim_rank)"
    "   OR (excluded.claim_rank = token_usage.claim_rank AND (excluded.occurred_at < token_usage.occurred_at"
    "     OR (excluded.occurred_at = token_usage.occurred_at AND excluded.session_id <= token_usage.session_id))))"
    " AND (excluded.tokens IS NOT token_usage.tokens OR excluded.agent_id IS NOT token_usage.agent_id"
    "   OR excluded.model IS NOT token_usage.model OR excluded.occurred_at IS NOT token_usage.occurred_at"
    "   OR excluded.session_id IS NOT token_usage.session_id OR excluded.claim_rank IS NOT token_usage.claim_rank"
    "   OR excluded.is_compaction_baseline IS NOT token_usage.is_compaction_baseline"
    "   OR excluded.prompt_tokens IS NOT token_usage.prompt_tokens OR excluded.speed IS NOT token_usage.speed"
    "   OR excluded.web_search_requests IS NOT token_usage.web_search_requests)"
)
UPSERT_TOOL = (
    "INSERT INTO tool_calls (session_id, tool_use_id, agent_id, tool_name, started_at, ended_at, status)"
    " VALUES (?,?,?,?,?,?,?) ON CONFLICT (session_id, tool_use_id) DO UPDATE SET agent_id=excluded.agent_id,"
    " tool_name=excluded.tool_name, started_at=excluded.started_at, ended_at=excluded.ended_at,"
    " status=excluded.status"
)
UPSERT_COMPACTION = (
    "INSERT INTO compactions (session_id, boundary_id, agent_id, occurred_at, trigger, pre_tokens)"
    " VALUES (?,?,?,?,?,?) ON CONFLICT (session_id, boundary_id) DO UPDATE SET agent_id=excluded.agent_id,"
    " occurred_at=excluded.occurred_at, trigger=excluded.trigger, pre_tokens=excluded.pre_tokens"
)
INSERT_EVENT = (
    "INSERT INTO events (raw_event_id, session_id, agent_id, event_type, occurred_at) VALUES (?,?,?,?,?)"
    " ON CONFLICT (raw_event_id) DO NOTHING"
)
UPSERT_QUARANTINE = (
    "INSERT INTO quarantine (raw_event_id, reason, session_id, origin, origin_offset, detail)"
    " VALUES (?,?,?,?,?,?) ON CONFLICT (raw_event_id, reason) DO UPDATE SET detail=excluded.detail"
)
UPSERT_CHECKPOINT = (
    "INSERT INTO ingest_checkpoints (root, origin, session_id, origin_gen, committed_offset, size, mtime_ns,"
    " inode, head_hash, ingest_revision, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT (root, origin) DO UPDATE SET session_id=excluded.session_id, origin_gen=excluded.origin_gen,"
    " committed_offset=excluded.committed_offset, size=excluded.size, mtime_ns=excluded.mtime_ns,"
    " inode=excluded.inode, head_hash=excluded.head_hash, ingest_revision=excluded.ingest_revision,"
    " updated_at=excluded.updated_at"
)
BUMP_STAT = (
    "INSERT INTO ingest_stats (name, value) VALUES (?, ?)"
    " ON CONFLICT (name) DO UPDATE SET value = value + excluded.value"
)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Tail state of one file, committed with the rows read from it (SPEC §7).

    Attributes:
        root: str, the projects root (absolute path).
        origin: str, the file's path relative to ``root``.
        session_id: str | None, the session the path names.
        origin_gen: int, rewrite generation.
        committed_offset: int, bytes, end of the last complete line read.
        size: int, bytes, file size at read time; mtime_ns: int, ns; inode: int.
        head_hash: str, hash of the bytes just before ``committed_offset``.
        ingest_revision: int, parsing semantics revision.
        updated_at: str, canonical UTC.
    """

    root: str
    origin: str
    session_id: str | None
    origin_gen: int
    committed_offset: int
    size: int
    mtime_ns: int
    inode: int
    head_hash: str
    ingest_revision: int
    updated_at: str


@dataclass(slots=True)
class BatchResult:
    """What one ``apply_batch`` did.

    Attributes:
        inserted: int, log rows appended (rows whose key already existed are not counted).
        log_ids: dict idempotency_key -> events_raw.id for the inserted rows.
        sessions: set of session ids whose projections were updated.
        isolated: idempotency keys of rows the database refused, logged without their
            projection and quarantined (``ingestd.store.isolate``).
    """

    inserted: int = 0
    log_ids: dict[str, int] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)
    isolated: list[str] = field(default_factory=list)


class FoldCache:
    """Bounded LRU of per-session fold states, each with the last log id it has seen.

    A state is brought up to date from the log (``events_raw_session`` index) before use, so
    another writer appending to the same database (daemon and ``ingest``) is picked up, and a
    miss costs one indexed scan of the session's rows. That catch-up query is skipped while
    the cache is known current: nobody else has committed to the connection it was last used
    with since (``PRAGMA data_version`` unchanged), so every cached state has seen every row.
    """

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._d: collections.OrderedDict[str, tuple[SessionState, int]] = collections.OrderedDict()
        # (connection, its data_version) as of the end of the last committed batch
        self.seen: tuple[apsw.Connection, int] | None = None
        self.gap_queries = 0  # catch-up queries run (tests count them)

    def take(self, sid: str) -> tuple[SessionState | None, int]:
        """Remove and return ``(state, last_id)`` (``(None, 0)`` on a miss)."""
        got = self._d.pop(sid, None)
        return got if got is not None else (None, 0)

    def put(self, sid: str, state: SessionState, last_id: int) -> None:
        """Store a state (evicting the least recently used beyond capacity)."""
        self._d[sid] = (state, last_id)
        while len(self._d) > self.capacity:
            self._d.popitem(last=False)


def row_from_db(r: Sequence[Any]) -> LogRow:
    """A ``LogRow`` from a ``SELECT {LOG_COLUMNS}`` row."""
    payload = r[3]
    if isinstance(payload, str):
        payload = payload.encode("utf-8", "surrogatepass")
    return LogRow(r[0], r[1], r[2], payload, r[4], r[5], r[6], r[7], r[8])


def write_changes(conn: apsw.Connection, ch: derive.Changes, log: apsw.Connection | None = None) -> None:
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
        retitle.update(str(r[0]) for r in ch.sessions if r[8] is None)
    if ch.summaries:
        retitle |= titles.resolve_summaries(log if log is not None else conn, conn, ch.summaries)
    titles.refresh(conn, retitle)
    if ch.retracted_agents:
        conn.executemany(
            "DELETE FROM orchestration_edges WHERE session_id = ? AND child_agent_id = ?", ch.retracted_agents
        )
        conn.executemany("DELETE FROM agents WHERE session_id = ? AND id = ?", ch.retracted_agents)
    if ch.agents:
        conn.executemany(UPSERT_AGENT, ch.agents)
    if ch.edges:
        conn.executemany(UPSERT_EDGE, ch.edges)
    if ch.token_usage:
        bulk.upsert_token_usage(conn, UPSERT_TOKENS, ch.token_usage)
    if ch.tool_calls:
        conn.executemany(UPSERT_TOOL, ch.tool_calls)
    if ch.compactions:
        conn.executemany(UPSERT_COMPACTION, ch.compactions)
    if ch.events:
        conn.executemany(INSERT_EVENT, ch.events)
    if ch.quarantine:
        conn.executemany(UPSERT_QUARANTINE, ch.quarantine)


def window_of(payload: bytes | str) -> int | None:
    """The ``window_s`` a ``watchdog`` log row records (whole seconds >= 1), else None. Pure."""
    try:
        doc = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    w = doc.get("window_s") if isinstance(doc, dict) else None
    return w if isinstance(w, int) and not isinstance(w, bool) and w >= 1 else None


def effective_window(conn: apsw.Connection, default_s: int = WATCHDOG_WINDOW_S) -> int:
    """The watchdog window in force: the one the newest ``watchdog`` log row records, else ``default_s``.

    The window is part of the log (the daemon logs a row when it starts with a window other
    than the one in force), so `ingest`, the daemon and a replay all apply the same one.
    Read from ``meta.watchdog_window_s``, which ``apply_batch`` keeps with the rows.
    """
    rows = conn.execute("SELECT value FROM meta WHERE key = 'watchdog_window_s'").fetchall()
    if rows and isinstance(rows[0][0], str) and rows[0][0].isdigit():
        return int(rows[0][0])
    return default_s


# An agent is not idle while any agent below it is working: a main agent blocked on a long
# Task is busy (found live: the parent showed `unknown` while its Explore subagent worked).
# `alive`: every non-terminal agent active inside the window, and all of its ancestors.
# Agents are (session_id, id) pairs (migration 0009); an ancestor is always in its child's session.
_ALIVE = (
    "WITH RECURSIVE alive(session_id, id) AS ("
    " SELECT session_id, id FROM agents WHERE status IN ('working', 'waiting') AND last_seen_at >= ?1"
    " UNION SELECT a.session_id, a.parent_agent_id FROM agents a"
    " JOIN alive ON a.session_id = alive.session_id AND a.id = alive.id"
    " WHERE a.parent_agent_id IS NOT NULL) "
)
_IDLE_AGENTS = (
    "status IN ('working', 'waiting') AND last_seen_at < ?1"
    " AND (session_id, id) NOT IN (SELECT session_id, id FROM alive)"
)
_IDLE_SESSIONS = "status IN ('working', 'waiting') AND last_activity_at < ?1"
# An agent the pass moved to `unknown` earlier gets its evidence status back once a descendant
# works again (that activity does not touch the ancestor's own row).
_BACK_FROM_UNKNOWN = (
    "UPDATE agents SET status = evidence_status WHERE status = 'unknown'"
    " AND evidence_status IN ('working', 'waiting') AND (session_id, id) IN (SELECT session_id, id FROM alive)"
)


def stale_count(conn: apsw.Connection, cutoff: str) -> int:
    """How many agents and sessions a watchdog pass with ``cutoff`` would move to ``unknown``. Read-only."""
    agents: Any = conn.execute(
        _ALIVE + "SELECT count(*) FROM agents WHERE " + _IDLE_AGENTS,
        (cutoff,),
    ).fetchall()[0][0]
    sessions: Any = conn.execute(
        "SELECT count(*) FROM sessions WHERE " + _IDLE_SESSIONS,
        (cutoff,),
    ).fetchall()[0][0]
    return int(agents) + int(sessions)


def watchdog(conn: apsw.Connection, as_of: str, window_s: int = WATCHDOG_WINDOW_S) -> int:
    """Move non-terminal agents (and sessions) idle for ``window_s`` before ``as_of`` to ``unknown``.

    An agent with a working descendant is not idle; one moved earlier gets its evidence status
    back when a descendant works again. A function of the final rows, so replay agrees.

    Args:
        as_of: str, canonical UTC; the newest log time (never the wall clock, so replays agree).
        window_s: int, seconds.

    Returns:
        int, agents changed.
    """
    cutoff = watchdog_cutoff(as_of, window_s)
    if cutoff is None:
        return 0
    conn.execute(_ALIVE + "UPDATE agents SET status = 'unknown' WHERE " + _IDLE_AGENTS, (cutoff,))
    n = conn.changes()
    conn.execute(_ALIVE + _BACK_FROM_UNKNOWN, (cutoff,))
    conn.execute("UPDATE sessions SET status = 'unknown' WHERE " + _IDLE_SESSIONS, (cutoff,))
    return n


_CUTOFF_HEADS: dict[tuple[str, int], str] = {}


def watchdog_cutoff(as_of: str, window_s: int) -> str | None:
    """``as_of - window_s`` spelled canonically; None when ``as_of`` is not an instant.

    It runs in every write transaction (parsing and formatting it was about a seventh of a
    one-hook transaction's CPU). A whole number of seconds leaves the milliseconds alone, so
    the date-time part is memoised per second of ``as_of`` and the ``.sssZ`` tail reused.
    """
    if len(as_of) == 24 and as_of[19] == "." and as_of[20:23].isdigit() and as_of[23] == "Z":
        key = (as_of[:19], window_s)
        head = _CUTOFF_HEADS.get(key)
        if head is None:
            t = parse(as_of)
            if t is None:
                return None
            head = format_utc(t - timedelta(seconds=window_s))[:19]
            if len(_CUTOFF_HEADS) >= 256:
                _CUTOFF_HEADS.clear()
            _CUTOFF_HEADS[key] = head
        return head + as_of[19:]
    t = parse(as_of)
    return None if t is None else format_utc(t - timedelta(seconds=window_s))


# Rows the database refused to project (isolated by ``ingestd.store.isolate``) are never folded.
NOT_ISOLATED = " AND id NOT IN (SELECT raw_event_id FROM quarantine WHERE reason = 'storage')"


def _load(conn: apsw.Connection, sid: str, after_id: int, before_id: int) -> list[LogRow]:
    return [
        row_from_db(r)
        for r in conn.execute(
            f"SELECT {LOG_COLUMNS} FROM events_raw WHERE session_id = ? AND id > ? AND id < ?{NOT_ISOLATED}"
            " ORDER BY id",
            (sid, after_id, before_id),
        )
    ]


def fold_refolding(
    state: SessionState | None,
    sid: str,
    rows: Sequence[LogRow],
    ctx: Ctx,
    load_all: Callable[[], Sequence[LogRow]],
) -> tuple[SessionState, derive.Changes]:
    """``project.fold``, then, while the state asks for it (``SessionState.needs_refold``: a
    refused timestamp in a file folded before it was indexed), the session folded again from
    every one of its log rows (``load_all``); the changes of every pass, in order."""
    state, ch = project.fold(state, sid, rows, ctx)
    while state.needs_refold:
        state, more = project.fold(refold_state(state), sid, load_all(), ctx)
        ch.extend(more)
    return state, ch


def quarantine_marker(row: NewLogRow, raw_event_id: int | None, detail: str) -> NewLogRow:
    """The ``quarantine`` log row (source ``ingestd``) recording that ``row`` was isolated.

    Its payload names the isolated row (``raw_event_id``; None when even the row could not be
    logged) and the database's refusal; the projector turns it into a ``storage`` quarantine row
    and the shell never folds the isolated row (``NOT_ISOLATED``), so a replay agrees.
    """
    payload = orjson.dumps(
        {"raw_event_id": raw_event_id, "key": row.idempotency_key, "reason": "storage", "detail": detail[:400]}
    )
    return NewLogRow(
        f"q:{row.idempotency_key}",
        "ingestd",
        "quarantine",
        payload,
        row.received_at,
        row.session_id,
        row.origin,
        row.origin_gen,
        row.origin_offset,
    )


def _max_log_id(conn: apsw.Connection) -> int:
    v: Any = conn.execute("SELECT max(id) FROM events_raw").fetchall()[0][0]
    return int(v) if v is not None else 0


def _append(conn: apsw.Connection, rows: Sequence[NewLogRow]) -> tuple[dict[str, int], int]:
    """Insert log rows (existing keys skipped); return (key -> id of the inserted rows, rows inserted).

    Inside the write transaction nobody else appends, and SQLite gives each new row
    ``max(id) + 1``: when every row went in, the ids are the range past the old maximum in
    row order, so no ``RETURNING`` row has to come back per insert (a third of the insert's
    cost). When some keys already existed, the new rows are read back by id.
    """
    before = _max_log_id(conn)
    conn.executemany(INSERT_LOG, [r.db_tuple() for r in rows])
    after = _max_log_id(conn)
    if after - before == len(rows):
        return {r.idempotency_key: before + 1 + i for i, r in enumerate(rows)}, len(rows)
    got: dict[str, int] = {
        str(k): int(i) for i, k in conn.execute("SELECT id, idempotency_key FROM events_raw WHERE id > ?", (before,))
    }
    return got, after - before


def apply_batch(
    conn: apsw.Connection,
    new_rows: Sequence[NewLogRow],
    *,
    checkpoints: Iterable[Checkpoint] = (),
    ctx: Ctx | None = None,
    cache: FoldCache | None = None,
    watchdog_window_s: int = WATCHDOG_WINDOW_S,
    isolated: Mapping[str, str] | None = None,
) -> BatchResult:
    """Append log rows and project them, in one ``BEGIN IMMEDIATE`` transaction.

    Args:
        conn: a connection from ``ingestd.store.connection.connect`` (migrated).
        new_rows: rows to append; rows whose ``idempotency_key`` exists are skipped (not re-folded).
        checkpoints: tail checkpoints committed with the rows.
        ctx: instance / host ids for edges.
        cache: fold states to reuse across calls (a fresh one per call when None).
        watchdog_window_s: int, seconds of inactivity before ``unknown``.
        isolated: idempotency key -> the database's refusal, for rows to append without
            projecting them (``ingestd.store.isolate``): each inserted one gets its
            ``quarantine_marker`` row, appended and folded in the same transaction.

    Returns:
        ``BatchResult``.

    Raises:
        StorageError: the database refused; nothing of the batch remains (and ``cache`` forgets
            the sessions the batch touched).
    """
    cache = cache if cache is not None else FoldCache()
    ctx = ctx if ctx is not None else Ctx()
    result = BatchResult()
    touched: list[str] = []
    seen: list[int] = []

    def run(c: apsw.Connection) -> BatchResult:
        first_id = 0
        rows_in: Sequence[NewLogRow] = new_rows
        if new_rows:
            result.log_ids, result.inserted = _append(c, new_rows)
            first_id = min(result.log_ids.values()) if result.inserted else 0
            if isolated:
                markers = [
                    quarantine_marker(r, result.log_ids[r.idempotency_key], isolated[r.idempotency_key])
                    for r in new_rows
                    if r.idempotency_key in isolated and r.idempotency_key in result.log_ids
                ]
                if markers:
                    ids, n = _append(c, markers)
                    result.log_ids.update(ids)
                    result.inserted += n
                    if not first_id:
                        first_id = min(ids.values())
                rows_in = [*(r for r in new_rows if r.idempotency_key not in isolated), *markers]
        by_session: dict[str, list[LogRow]] = {}
        stats: collections.Counter[str] = collections.Counter()
        as_of = ""
        window: tuple[int, int] | None = None  # (log id, window_s) of the newest watchdog row
        ids = result.log_ids
        for r in rows_in:
            rid = ids.get(r.idempotency_key)
            if rid is None:
                continue
            if r.source == "jsonl":
                stats["lines"] += 1
                if r.reason:
                    stats[f"skipped.{r.reason}"] += 1
                if r.recovered:
                    stats["recovered"] += 1
            if r.received_at > as_of:
                as_of = r.received_at
            if r.source == "ingestd" and r.event_type == "watchdog":
                w = window_of(r.payload)
                if w is not None and (window is None or rid > window[0]):
                    window = (rid, w)
            if r.session_id is None:
                continue
            by_session.setdefault(r.session_id, []).append(r.logged(rid))
        changes = derive.Changes()
        # Read inside the transaction: our own commit leaves it unchanged, anyone else's moves it.
        dv: Any = c.execute("PRAGMA data_version").fetchall()[0][0]
        version = int(dv)
        current = cache.seen is not None and cache.seen[0] is c and cache.seen[1] == version
        cache.seen = None  # until this batch commits
        seen.append(version)
        for sid, rows in by_session.items():
            touched.append(sid)
            state, last_id = cache.take(sid)
            if state is not None and current:
                gap = []
            else:
                cache.gap_queries += 1
                gap = _load(c, sid, last_id, first_id)
            if gap:
                state, _ = project.fold(state, sid, gap, ctx)
            last = rows[-1].id

            def load_all(sid: str = sid, last: int = last) -> list[LogRow]:
                return _load(c, sid, 0, last + 1)

            state, ch = fold_refolding(state, sid, rows, ctx, load_all)
            changes.extend(ch)
            cache.put(sid, state, rows[-1].id)
        write_changes(c, changes)
        # a summary stored earlier whose leaf record is among this batch's rows (ingestd.store.titles)
        titles.refresh(c, titles.resolve_leaves(c, [r for rows in by_session.values() for r in rows]))
        result.sessions = set(by_session)
        cps = [
            (
                k.root,
                k.origin,
                k.session_id,
                k.origin_gen,
                k.committed_offset,
                k.size,
                k.mtime_ns,
                k.inode,
                k.head_hash,
                k.ingest_revision,
                k.updated_at,
            )
            for k in checkpoints
        ]
        if cps:
            c.executemany(UPSERT_CHECKPOINT, cps)
        if stats:
            c.executemany(BUMP_STAT, list(stats.items()))
        if window is not None:
            c.execute(
                "INSERT INTO meta (key, value) VALUES ('watchdog_window_s', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(window[1]),),
            )
        if as_of:
            # the newest log time only moves forward: one statement keeps the max and returns it
            kept: Any = c.execute(
                "INSERT INTO meta (key, value) VALUES ('log_as_of', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value) RETURNING value",
                (as_of,),
            ).fetchall()[0][0]
            watchdog(c, str(kept), effective_window(c, watchdog_window_s))
        return result

    try:
        out = write_txn(conn, run)
    except BaseException:
        for sid in touched:
            cache.take(sid)
        raise
    if seen:
        cache.seen = (conn, seen[0])
    return out
