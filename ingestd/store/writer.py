"""The one write path for log rows and their projections (DESIGN.md "Writers", SPEC §3, §4, §7).

``apply_batch`` is used by ``ingestd ingest`` and by the daemon (hook receiver, tailer): inside
one ``BEGIN IMMEDIATE`` transaction it appends the log rows (skipping keys already present),
folds the newly inserted rows per session (``fold_into``, which the rebuilds use too), upserts the
projection rows, drops what prune receipts cover (``pruned``), writes the tail checkpoints and
runs the watchdog pass. The parts live by role:
``logrows`` (the log), ``upsert`` (projection rows), ``watchdog_pass``, ``foldcache``.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import apsw

from ingestd.core import derive, projector
from ingestd.core.records import LogRow, NewLogRow
from ingestd.core.rows import Checkpoint
from ingestd.core.state import SessionState
from ingestd.core.touch import Ctx
from ingestd.core.watchdog import WATCHDOG_WINDOW_S, window_of
from ingestd.store import payload_blocks, pruned, titles
from ingestd.store.connection import write_txn
from ingestd.store.foldcache import FoldCache
from ingestd.store.logrows import append, quarantine_marker, session_rows
from ingestd.store.payload_blocks import PreBlocks
from ingestd.store.upsert import BUMP_STAT, write_changes, write_checkpoints
from ingestd.store.watchdog_pass import clock_bound, effective_window, reference, watchdog_pass

# One session's share of a fold: its id, the log rows to fold, and its whole log so far (read
# only when the fold must refold, ``projector.History``).
SessionWork = tuple[str, Sequence[LogRow], projector.History]


def fold_into(
    conn: apsw.Connection,
    states: MutableMapping[str, SessionState],
    work: Iterable[SessionWork],
    ctx: Ctx,
    *,
    log: apsw.Connection | None = None,
) -> None:
    """Fold these log rows into this transaction: each session's rows through the projector, then
    every touched projection row upserted (``upsert.write_changes``), in the caller's transaction.

    The one fold step of ``apply_batch`` and of both rebuild paths (``ingestd.ingest.rebuild``).

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
    write_changes(conn, changes, log)


@dataclass(slots=True)
class PrefoldGate:
    """Shared by the prefolds of one run: once one is refused, every later one is too (the fold
    states they were made from assumed the refused batch's ids)."""

    refused: bool = False
    accepted: int = 0  # prefolds written (tests and the log count them)


@dataclass(slots=True)
class Prefold:
    """A batch folded ahead, outside the write transaction, under predicted log ids.

    Attributes:
        first_id: int, the id predicted for the batch's first row (the others follow in order).
        changes: the projection rows of folding the batch's rows, by session in order of first
            appearance, onto states that had seen exactly the rows of the earlier prefolds; a
            session id in their place is a session the folder had no state for (evicted, or its
            fold needed the session's log): the writer folds that one itself, there.
        gate: the run's ``PrefoldGate``.
    """

    first_id: int
    changes: list[derive.Changes | str]
    gate: PrefoldGate


def _prefold_holds(
    pre: Prefold, new_rows: Sequence[NewLogRow], isolated: Mapping[str, str] | None, result: BatchResult
) -> bool:
    """Whether ``pre`` is this batch's fold: every row went in, at the predicted ids, and no
    earlier prefold of the run was refused. A refusal closes the gate for the rest of the run."""
    if pre.gate.refused:
        return False
    ids = result.log_ids
    ok = not isolated and result.inserted == len(new_rows)
    ok = ok and all(ids.get(r.idempotency_key) == pre.first_id + i for i, r in enumerate(new_rows))
    if not ok:
        pre.gate.refused = True
    else:
        pre.gate.accepted += 1
    return ok


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


def apply_batch(
    conn: apsw.Connection,
    new_rows: Sequence[NewLogRow],
    *,
    checkpoints: Iterable[Checkpoint] = (),
    ctx: Ctx | None = None,
    cache: FoldCache | None = None,
    watchdog_window_s: int = WATCHDOG_WINDOW_S,
    isolated: Mapping[str, str] | None = None,
    prefold: Prefold | None = None,
    pre_blocks: PreBlocks | None = None,
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
        prefold: the batch folded ahead (``Prefold``): its rows are written instead of folding
            here when the ids are as predicted (``_prefold_holds``), else the batch is folded here.
        pre_blocks: the batch's blocks planned and compressed ahead, with a dictionary trained
            ahead (``payload_blocks.PreBlocks``): used where exactly what this transaction would make.

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
        rows_in, first_id = _append_batch(c, new_rows, isolated, result, pre_blocks)
        batch = _sort_batch(rows_in, result.log_ids)
        if prefold is not None and _prefold_holds(prefold, new_rows, isolated, result):
            _write_prefold(c, prefold, cache, batch, first_id, ctx, touched)
        else:
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


def _write_forgetting(
    conn: apsw.Connection, run: Callable[[apsw.Connection], BatchResult], cache: FoldCache, touched: list[str]
) -> BatchResult:
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
    c: apsw.Connection,
    new_rows: Sequence[NewLogRow],
    isolated: Mapping[str, str] | None,
    result: BatchResult,
    pre: PreBlocks | None = None,
) -> tuple[Sequence[NewLogRow], int]:
    """Append the rows and the quarantine markers of the isolated ones; return the rows to fold
    (isolated rows left out, markers in) and the smallest new log id (0: none). Fills ``result``."""
    if not new_rows:
        return new_rows, 0
    result.log_ids, result.inserted = append(c, new_rows, pre)
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
    """The inserted rows (those ``ids`` names) sorted by session, counted and dated. Pure."""
    out = _Sorted()
    for r in rows_in:
        rid = ids.get(r.idempotency_key)
        if rid is None:
            continue
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
    c: apsw.Connection,
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
    states: dict[str, SessionState] = {}
    work: list[SessionWork] = []
    for sid, rows in by_session.items():
        touched.append(sid)
        state = _caught_up(c, cache, sid, first_id, current, ctx)
        if state is not None:
            states[sid] = state
        work.append((sid, rows, _history(c, sid, rows)))
    fold_into(c, states, work, ctx)
    for sid, rows in by_session.items():
        cache.put(sid, states[sid], rows[-1].id)
    return version


def _caught_up(
    c: apsw.Connection, cache: FoldCache, sid: str, first_id: int, current: bool, ctx: Ctx
) -> SessionState | None:
    """``sid``'s cached state (taken out of ``cache``) brought up to the log just before ``first_id``:
    a miss, or a cache not known ``current``, folds the session's rows since the state's last id."""
    state, last_id = cache.take(sid)
    if state is None or not current:
        cache.gap_queries += 1
        gap = session_rows(c, sid, last_id, first_id)
        if gap:

            def before() -> list[LogRow]:
                return session_rows(c, sid, 0, first_id)

            state, _ = projector.fold(state, sid, gap, ctx, before)
    return state


def _history(c: apsw.Connection, sid: str, rows: Sequence[LogRow]) -> projector.History:
    """The session's whole log up to its last row of the batch, read only if a fold asks (a refold)."""
    last = rows[-1].id
    return lambda: session_rows(c, sid, 0, last + 1)


def _write_prefold(
    c: apsw.Connection, prefold: Prefold, cache: FoldCache, batch: _Sorted, first_id: int, ctx: Ctx, touched: list[str]
) -> None:
    """Write the fold made ahead: the states behind it are the folder's, so ``cache``'s for the
    batch's sessions are stale from now on (taken out, named in ``touched``). A session the folder
    left to this writer (a ``str`` in ``prefold.changes``) is folded here as ``_fold_batch`` would
    (caught up from the log, its state kept in ``cache``) and its rows take its place in the order."""
    cache.seen = None
    mine = {p for p in prefold.changes if isinstance(p, str)}
    for sid in batch.by_session:
        touched.append(sid)
        if sid not in mine:
            cache.take(sid)
    if len(prefold.changes) == 1 and not mine:
        write_changes(c, cast(derive.Changes, prefold.changes[0]))
        return
    changes = derive.Changes()
    for part in prefold.changes:
        if isinstance(part, str):
            rows = batch.by_session[part]
            state = _caught_up(c, cache, part, first_id, False, ctx)
            state, ch = projector.fold(state, part, rows, ctx, _history(c, part, rows))
            cache.put(part, state, rows[-1].id)
            changes.extend(ch)
        else:
            changes.extend(part)
    write_changes(c, changes)


def _finish(
    c: apsw.Connection, batch: _Sorted, checkpoints: Iterable[Checkpoint], default_window_s: int, first_id: int
) -> None:
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
        # the newest log time only moves forward: one statement keeps the max and returns it
        kept: Any = c.execute(
            "INSERT INTO meta (key, value) VALUES ('log_as_of', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value) RETURNING value",
            (batch.as_of,),
        ).fetchall()[0][0]
        as_of = reference(c, str(kept), clock_bound(time.time_ns()), first_id)
        if as_of:
            watchdog_pass(c, as_of, effective_window(c, default_window_s))
