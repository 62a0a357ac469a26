"""The one write path for log rows and their projections (DESIGN.md "Writers", SPEC §3, §4, §7).

``apply_batch`` is used by ``ingestd ingest`` and by the daemon (hook receiver, tailer): inside
one ``BEGIN IMMEDIATE`` transaction it appends the log rows (skipping keys already present),
folds the newly inserted rows per session (``fold_into``, which the rebuilds use too), upserts the
projection rows, drops what prune receipts cover (``pruned``), writes the tail checkpoints and
runs the watchdog pass. The parts live by role: ``logrows`` (the log), ``upsert`` (projection
rows), ``watchdog_pass``; ``FoldCache`` keeps per-session fold states between write transactions.

``apply_isolating`` is how every writer calls ``apply_batch`` (``ingest``, the tailer, the hook
writer), so that a batch the database refuses never takes its neighbours down (SPEC §12 "No input
stops the pipeline"):

- a **transient** refusal (the database is busy or locked past the busy timeout, the disk is
  full, an I/O error) is retried with exponential backoff; while it lasts the component is
  *stalled*, reported to the backoff's ``StallReport`` (``ingestd.store.stall``; in the daemon its
  ``Health``: ``/api/health``, ``/api/status`` and, through the mirror file, ``ingestd status``);
- any other refusal (a constraint or guard trigger, something the core's validation did not
  foresee) splits the batch in halves until the failing row is alone; that row is then
  appended *without its projection* and quarantined with the database's message
  (``logrows.quarantine_marker``), so every other row of the batch, file and root commits.
  The checkpoints travel with the last part, so a crash in between re-reads (keys make it
  harmless) instead of skipping lines.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ingestd.core import derive, projector
from ingestd.core.records import LogRow, NewLogRow
from ingestd.core.rows import Checkpoint
from ingestd.core.state import SessionState
from ingestd.core.touch import Ctx
from ingestd.core.watchdog import WATCHDOG_WINDOW_S, window_of
from ingestd.errors import BusyError, StorageError
from ingestd.logs import get_logger
from ingestd.store import payload_blocks, pruned, stall, titles
from ingestd.store.connection import Db, write_txn
from ingestd.store.logrows import append, quarantine_marker, session_rows
from ingestd.store.upsert import BUMP_STAT, write_changes, write_checkpoints
from ingestd.store.watchdog_pass import clock_bound, effective_window, reference, watchdog_pass

# One session's share of a fold: its id, the log rows to fold, and its whole log so far (read
# only when the fold must refold, ``projector.History``).
SessionWork = tuple[str, Sequence[LogRow], projector.History]


def fold_into(
    conn: Db,
    states: MutableMapping[str, SessionState],
    work: Iterable[SessionWork],
    ctx: Ctx,
    *,
    log: Db | None = None,
) -> None:
    """Fold these log rows into this transaction: each session's rows through the projector, then
    every touched projection row upserted (``upsert.write_changes``), in the caller's transaction.

    The one fold step of ``apply_batch`` and of both rebuild paths (``ingestd.projection.rebuild``).

    Args:
        conn: the connection written.
        states: session id -> fold state so far; read (missing: empty) and replaced by the new state.
        work: ``SessionWork`` items, folded in order (one session may come more than once).
        ctx: instance / host ids stamped on edges.
        log: the connection holding the log when it is not ``conn`` (``write_changes``).
    """
    changes = derive.Changes()
    for sid, rows, history in work:
        state, ch = projector.fold(states.get(sid), sid, rows, ctx, history)
        states[sid] = state
        changes.extend(ch)
    write_changes(conn, changes, log, ctx)


@dataclass(slots=True)
class BatchResult:
    """What one ``apply_batch`` did.

    Attributes:
        inserted: int, log rows appended (rows whose key already existed are not counted).
        log_ids: dict idempotency_key -> events_raw.id for the inserted rows.
        sessions: set of session ids whose projections were updated.
        isolated: idempotency keys of rows the database refused, logged without their
            projection and quarantined (``ingestd.store.writer``).
    """

    inserted: int = 0
    log_ids: dict[str, int] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)
    isolated: list[str] = field(default_factory=list)


def apply_batch(
    conn: Db,
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
            projecting them (``ingestd.store.writer``): each inserted one gets its
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

    def run(c: Db) -> BatchResult:
        rows_in, first_id = _append_batch(c, new_rows, isolated, result)
        batch = _sort_batch(rows_in, result.log_ids)
        seen.append(_fold_batch(c, cache, batch.by_session, first_id, ctx, touched))
        # pruned history re-read (a resumed session's copy) stays pruned, as in a replay
        pruned.enforce(c, batch.by_session)
        result.sessions = set(batch.by_session)
        _finish(c, batch, checkpoints, watchdog_window_s, first_id)
        return result

    out = _write_forgetting(conn, run, cache, touched)
    if seen:
        cache.seen = (conn, seen[0])
    return out


def _write_forgetting(conn: Db, run: Callable[[Db], BatchResult], cache: FoldCache, touched: list[str]) -> BatchResult:
    """``write_txn(conn, run)``; when it fails, ``cache`` forgets the sessions ``run`` named in
    ``touched`` (their states hold what rolled back). Either way the batch's rows kept for reading
    back (``payload_blocks.forget_batch``) are dropped."""
    try:
        return write_txn(conn, run)
    except BaseException:
        for sid in touched:
            cache.take(sid)
        raise
    finally:
        payload_blocks.forget_batch(conn)


def _append_batch(
    c: Db,
    new_rows: Sequence[NewLogRow],
    isolated: Mapping[str, str] | None,
    result: BatchResult,
) -> tuple[Sequence[NewLogRow], int]:
    """Append the rows and the quarantine markers of the isolated ones; return the rows to fold
    (isolated rows left out, markers in) and the smallest new log id (0: none). Fills ``result``."""
    if not new_rows:
        return new_rows, 0
    result.log_ids, result.inserted = append(c, new_rows)
    first_id = min(result.log_ids.values()) if result.inserted else 0
    if not isolated:
        return new_rows, first_id
    markers = [
        quarantine_marker(r, result.log_ids[r.idempotency_key], isolated[r.idempotency_key])
        for r in new_rows
        if r.idempotency_key in isolated and r.idempotency_key in result.log_ids
    ]
    if markers:
        ids, n = append(c, markers)
        result.log_ids.update(ids)
        result.inserted += n
        if not first_id:
            first_id = min(ids.values())
    return [*(r for r in new_rows if r.idempotency_key not in isolated), *markers], first_id


@dataclass(slots=True)
class _Sorted:
    """The inserted rows of a batch by session, with what the batch says beyond its rows.

    Attributes:
        by_session: session id -> its inserted rows as ``LogRow``s, in batch order.
        stats: ``ingest_stats`` increments (transcript lines, skipped reasons, recovered).
        as_of: str, the newest ``received_at`` of the inserted rows ('' for none).
        window: (log id, window_s) of the newest ``watchdog`` row recording a window, else None.
    """

    by_session: dict[str, list[LogRow]] = field(default_factory=dict)
    stats: collections.Counter[str] = field(default_factory=collections.Counter)
    as_of: str = ""
    window: tuple[int, int] | None = None


def _sort_batch(rows_in: Sequence[NewLogRow], ids: Mapping[str, int]) -> _Sorted:
    """The inserted rows (those ``ids`` names, the first of the batch under each key) sorted by
    session, counted and dated. Pure."""
    out = _Sorted()
    taken: set[str] = set()
    for r in rows_in:
        rid = ids.get(r.idempotency_key)
        if rid is None or r.idempotency_key in taken:
            # not appended: its key was there, or an earlier row of the batch took it (a client's
            # Idempotency-Key on two bodies at once: the first is the one in the log)
            continue
        taken.add(r.idempotency_key)
        if r.source == "jsonl":
            out.stats["lines"] += 1
            if r.reason:
                out.stats[f"skipped.{r.reason}"] += 1
            if r.recovered:
                out.stats["recovered"] += 1
        if r.received_at > out.as_of:
            out.as_of = r.received_at
        if r.source == "ingestd" and r.event_type == "watchdog":
            w = window_of(r.payload)
            if w is not None and (out.window is None or rid > out.window[0]):
                out.window = (rid, w)
        if r.session_id is not None:
            out.by_session.setdefault(r.session_id, []).append(r.logged(rid))
    return out


def _fold_batch(
    c: Db,
    cache: FoldCache,
    by_session: dict[str, list[LogRow]],
    first_id: int,
    ctx: Ctx,
    touched: list[str],
) -> int:
    """Fold each session's new rows onto its cached state (caught up from the log first unless the
    cache is known current) and upsert the touched rows; returns the connection's data_version."""
    # Read inside the transaction: our own commit leaves it unchanged, anyone else's moves it.
    dv: Any = c.execute("PRAGMA data_version").fetchall()[0][0]
    version = int(dv)
    current = cache.seen is not None and cache.seen[0] is c and cache.seen[1] == version
    cache.seen = None  # until this batch commits
    if not current:
        # someone else committed: every cached state may lack their rows, not only this batch's
        # sessions, and this batch catches up only its own
        cache.fresh.clear()
    states: dict[str, SessionState] = {}
    work: list[SessionWork] = []
    for sid, rows in by_session.items():
        touched.append(sid)
        state = _caught_up(c, cache, sid, first_id, sid in cache.fresh, ctx)
        if state is not None:
            states[sid] = state
        work.append((sid, rows, _history(c, sid, rows)))
    fold_into(c, states, work, ctx)
    for sid, rows in by_session.items():
        cache.put(sid, states[sid], rows[-1].id)
        cache.fresh.add(sid)
    return version


def _caught_up(c: Db, cache: FoldCache, sid: str, first_id: int, current: bool, ctx: Ctx) -> SessionState | None:
    """``sid``'s cached state (taken out of ``cache``) brought up to the log just before ``first_id``:
    a miss, or a state not known ``current`` (``FoldCache.fresh``), folds the session's rows since
    the state's last id."""
    state, last_id = cache.take(sid)
    if state is None or not current:
        cache.gap_queries += 1
        gap = session_rows(c, sid, last_id, first_id)
        if gap:

            def before() -> list[LogRow]:
                return session_rows(c, sid, 0, first_id)

            state, _ = projector.fold(state, sid, gap, ctx, before)
    return state


def _history(c: Db, sid: str, rows: Sequence[LogRow]) -> projector.History:
    """The session's whole log up to its last row of the batch, read only if a fold asks (a refold)."""
    last = rows[-1].id
    return lambda: session_rows(c, sid, 0, last + 1)


def _finish(c: Db, batch: _Sorted, checkpoints: Iterable[Checkpoint], default_window_s: int, first_id: int) -> None:
    """After the fold, inside the batch's transaction: resolve the titles of summaries whose leaf is
    among the batch's rows, commit the checkpoints, count the batch's lines, keep the logged window
    and the log's newest time, and run the watchdog pass at that time, capped at the clock
    (``watchdog_pass.reference``; ``first_id``: the batch's first log id)."""
    # a summary stored earlier whose leaf record is among this batch's rows (ingestd.store.titles)
    titles.refresh(c, titles.resolve_leaves(c, [r for rows in batch.by_session.values() for r in rows]))
    write_checkpoints(c, checkpoints)
    if batch.stats:
        c.executemany(BUMP_STAT, list(batch.stats.items()))
    if batch.window is not None:
        c.execute(
            "INSERT INTO meta (key, value) VALUES ('watchdog_window_s', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(batch.window[1]),),
        )
    if batch.as_of:
        # the newest log time only moves forward: the upsert keeps the max, read back after it (the same
        # upsert with RETURNING took about 1 ms at the end of a 250-row transaction, 10 us alone)
        c.execute(
            "INSERT INTO meta (key, value) VALUES ('log_as_of', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)",
            (batch.as_of,),
        )
        kept: Any = c.execute("SELECT value FROM meta WHERE key = 'log_as_of'").fetchall()[0][0]
        as_of = reference(c, str(kept), clock_bound(time.time_ns()), first_id)
        if as_of:
            watchdog_pass(c, as_of, effective_window(c, default_window_s))


log = get_logger("ingestd.store.isolate")

# apsw exception names (``StorageError.context["cause"]``) that say "try again later".
TRANSIENT_CAUSES = frozenset({"BusyError", "LockedError", "FullError", "IOError"})
# ... and those that are about the database, not about any row (read-only, corrupt, not a
# database, no permission): splitting the batch cannot help, the error is raised as it is.
DATABASE_CAUSES = frozenset(
    {
        "ReadOnlyError",
        "CorruptError",
        "NotADBError",
        "PermissionsError",
        "CantOpenError",
        "AuthError",
        "NoLFSError",
        "FileLost",
    }
)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry policy for transient refusals.

    Attributes:
        first_s: float, seconds before the first retry; doubled per retry.
        max_s: float, the longest wait between two retries.
        max_attempts: int | None, attempts before the error is raised (None: retry until it
            clears, the daemon's policy; the CLI gives up and says why).
        wait: waits the given seconds between retries (the daemon passes an event's ``wait``
            so a shutdown cuts it short; tests pass a fake).
        stop: when it returns True, the next retry is not made (shutdown): the error is raised.
        report: hears of each retry and of their end (the daemon's ``Health``; default nobody).
    """

    first_s: float = 0.1
    max_s: float = 30.0
    max_attempts: int | None = 8
    wait: Callable[[float], object] = time.sleep
    stop: Callable[[], bool] | None = None
    report: stall.StallReport = stall.NO_REPORT


def is_transient(e: StorageError) -> bool:
    """Whether a refusal may clear by itself (busy, locked, full, I/O)."""
    return isinstance(e, BusyError) or e.context.get("cause") in TRANSIENT_CAUSES


def about_rows(e: BaseException) -> bool:
    """Whether a failure may be one row's fault (a constraint, a guard, a value too big, a
    projector bug), so isolating that row lets the rest commit."""
    if not isinstance(e, StorageError):
        return True
    return not is_transient(e) and e.context.get("cause") not in DATABASE_CAUSES


def retrying(component: str, fn: Callable[[], BatchResult], backoff: Backoff) -> BatchResult:
    """``fn()``, retried on transient refusals with backoff; ``component`` is reported stalled meanwhile.

    Raises:
        StorageError: a non-transient refusal at once, a transient one after ``max_attempts``.
    """
    attempt = 0
    try:
        while True:
            try:
                return fn()
            except StorageError as e:
                if not is_transient(e):
                    raise
                attempt += 1
                if backoff.max_attempts is not None and attempt >= backoff.max_attempts:
                    raise
                if backoff.stop is not None and backoff.stop():
                    raise
                delay = min(backoff.max_s, backoff.first_s * 2 ** min(attempt - 1, 16))
                backoff.report.retrying(component, str(e))
                log.warning("write_stalled", component=component, error=str(e), attempt=attempt, retry_in_s=delay)
                backoff.wait(delay)
    finally:
        if attempt:
            backoff.report.retried(component)


def apply_isolating(
    conn: Db,
    rows: Sequence[NewLogRow],
    *,
    checkpoints: Iterable[Checkpoint] = (),
    component: str = "ingest",
    backoff: Backoff | None = None,
    ctx: Ctx | None = None,
    cache: FoldCache | None = None,
    watchdog_window_s: int = WATCHDOG_WINDOW_S,
) -> BatchResult:
    """``apply_batch`` that retries transient refusals and isolates the rows the database refuses.

    Args:
        conn, rows, checkpoints, ctx, cache, watchdog_window_s: as ``apply_batch``.
        component: str, the part a stall is reported under (``ingest``, ``tailer``, ``writer``).
        backoff: retry policy (default ``Backoff()``).

    Returns:
        ``BatchResult`` summed over the parts (``isolated`` lists the quarantined keys).

    Raises:
        StorageError: a transient refusal outlived ``backoff``, or a refusal that is not about
            any row (the checkpoints or the transaction itself).
    """
    iso = _Isolator(conn, component, backoff or Backoff(), ctx, cache, watchdog_window_s)
    iso.go(list(rows), list(checkpoints))
    return iso.total


@dataclass
class _Isolator:
    """One ``apply_isolating`` call: its arguments and the ``BatchResult`` summed over its parts."""

    conn: Db
    component: str
    policy: Backoff
    ctx: Ctx | None
    cache: FoldCache | None
    watchdog_window_s: int
    total: BatchResult = field(default_factory=BatchResult)

    def one(self, part: Sequence[NewLogRow], part_cps: list[Checkpoint], isolated: dict[str, str] | None) -> None:
        """Apply one part (retrying transient refusals) and add its result to ``total``."""
        res = retrying(
            self.component,
            lambda: apply_batch(
                self.conn,
                part,
                checkpoints=part_cps,
                ctx=self.ctx,
                cache=self.cache,
                watchdog_window_s=self.watchdog_window_s,
                isolated=isolated,
            ),
            self.policy,
        )
        _add(self.total, res)

    def go(self, part: Sequence[NewLogRow], part_cps: list[Checkpoint]) -> None:
        """Apply ``part``; on a refusal about its rows, halve it until the refused row is alone."""
        try:
            self.one(part, part_cps, None)
            return
        except Exception as e:
            # a projector bug (any exception) is isolated like a refusal: one record, not the batch
            if not about_rows(e) or not part:
                raise
            err = e
        if len(part) > 1:
            mid = len(part) // 2
            self.go(part[:mid], [])
            self.go(part[mid:], part_cps)
            return
        self.quarantine(part[0], part_cps, err)

    def quarantine(self, row: NewLogRow, part_cps: list[Checkpoint], err: Exception) -> None:
        """Store the refused ``row`` with its quarantine row, or, if even that fails, its marker alone."""
        log.warning("row_quarantined", reason="storage", origin=row.origin, offset=row.origin_offset, error=repr(err))
        why = str(err) if isinstance(err, StorageError) else f"projection failed: {err!r}"
        try:
            self.one([row], part_cps, {row.idempotency_key: why})
        except StorageError as e2:
            if not about_rows(e2):
                raise
            # not even the bare row can be stored: its marker alone records what was lost, and where
            log.error("row_unstorable", origin=row.origin, offset=row.origin_offset, error=str(e2))
            marker = quarantine_marker(row, None, f"{why}; the row itself could not be logged: {e2}")
            self.one([marker], part_cps, None)
        self.total.isolated.append(row.idempotency_key)


def _add(total: BatchResult, part: BatchResult) -> None:
    total.inserted += part.inserted
    total.log_ids.update(part.log_ids)
    total.sessions |= part.sessions


class FoldCache:
    """Bounded LRU of per-session fold states, each with the last log id it has seen.

    A state is brought up to date from the log (``log_rows_session`` index) before use, so
    another writer appending to the same database (daemon and ``ingest``) is picked up, and a
    miss costs one indexed scan of the session's rows. That catch-up query is skipped for a
    state in ``fresh``: caught up or folded by a batch after which nobody else has committed to
    the connection it was last used with (``PRAGMA data_version`` unchanged). A batch that finds
    another writer's commit empties ``fresh``: it catches up only its own sessions, and every
    other state may lack rows the other writer appended to its session.
    """

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._d: collections.OrderedDict[str, tuple[SessionState, int]] = collections.OrderedDict()
        # (connection, its data_version) as of the end of the last committed batch
        self.seen: tuple[Db, int] | None = None
        # the sessions whose states have seen every row as of ``seen``
        self.fresh: set[str] = set()
        self.gap_queries = 0  # catch-up queries run (tests count them)

    def take(self, sid: str) -> tuple[SessionState | None, int]:
        """Remove and return ``(state, last_id)`` (``(None, 0)`` on a miss)."""
        got = self._d.pop(sid, None)
        return got if got is not None else (None, 0)

    def put(self, sid: str, state: SessionState, last_id: int) -> None:
        """Store a state (evicting the least recently used beyond capacity)."""
        self._d[sid] = (state, last_id)
        while len(self._d) > self.capacity:
            self.fresh.discard(self._d.popitem(last=False)[0])
