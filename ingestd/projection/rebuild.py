"""Projections rebuilt from ``events_raw`` alone (SPEC §4, used by ``ingestd replay``).

Folds every session's log rows into a fresh database's projection tables. The batch size and
the order rows are fed in are parameters so two rebuilds can differ in both: the projector's
order independence makes their projection tables byte-identical.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import orjson

from ingestd.core import projector
from ingestd.core.projector import given
from ingestd.core.records import LogRow
from ingestd.core.state import SessionState
from ingestd.core.touch import Ctx
from ingestd.core.watchdog import WATCHDOG_WINDOW_S, window_of
from ingestd.store.connection import Db, scalar, write_txn
from ingestd.store.logrows import LOG_COLUMNS, row_from_db, session_rows
from ingestd.store.payload import decode as decode_payload
from ingestd.store.watchdog_pass import clock_bound, effective_window, newest_before, reference, watchdog_pass
from ingestd.store.writer import FoldCache, SessionWork, fold_into

ORDERS = ("log", "origin", "reverse")


def _order_sql(origin_order: str) -> str:
    if origin_order == "log":
        return "id"
    if origin_order == "origin":
        return "origin, origin_gen, origin_offset, id"
    if origin_order == "reverse":
        return "origin DESC, origin_gen DESC, origin_offset DESC, id DESC"
    raise ValueError(f"origin_order must be one of {ORDERS}")


def logged_window(src: Db) -> int | None:
    """The watchdog window the newest ``watchdog`` row of ``src``'s log records, else None. Read-only.

    Scans the log (no index on event_type): a rebuild reads all of it anyway.
    """
    for codec, stored in src.execute(
        "SELECT codec, payload FROM events_raw WHERE source = 'ingestd' AND event_type = 'watchdog' ORDER BY id DESC"
    ):
        w = window_of(decode_payload(src, codec, stored))
        if w is not None:
            return w
    return None


def isolated_ids(src: Db) -> set[int]:
    """Log ids of the rows the database refused to project live, from their ``quarantine``
    marker rows (``ingestd.store.writer``): a rebuild does not fold them either. Read-only."""
    out: set[int] = set()
    for codec, stored in src.execute(
        "SELECT codec, payload FROM events_raw WHERE source = 'ingestd' AND event_type = 'quarantine'"
    ):
        try:
            rid = orjson.loads(decode_payload(src, codec, stored)).get("raw_event_id")
        except (orjson.JSONDecodeError, AttributeError):
            continue
        if isinstance(rid, int) and not isinstance(rid, bool):
            out.add(rid)
    return out


@dataclass(frozen=True, slots=True)
class Folded:
    """How far a rebuild has folded the log, in its order of sessions (``rebuild_projections``, log order).

    Attributes:
        session: str, the session folded last: every log row of the sessions before it (in session
            id order) is folded, and its own rows up to ``last_id``.
        last_id: int, events_raw.id, ``session``'s last log row folded (a session is folded in id order).
        rows: int, log rows folded so far (isolated ones left out, as ``rebuild_projections`` counts).
    """

    session: str
    last_id: int
    rows: int


def folded_by(src: Db, at: Folded) -> int:
    """The log rows of ``src`` a rebuild in log order has folded once it stopped at ``at``, counted as
    ``rebuild_projections`` counts them (isolated ones left out): equal to ``at.rows`` only while the log
    up to ``at`` is the one it folded. Read-only (one scan of the log's sessions)."""
    n = int(
        scalar(
            src,
            "SELECT count(*) FROM events_raw WHERE session_id < ? OR (session_id = ? AND id <= ?)",
            (at.session, at.session, at.last_id),
        )
        or 0
    )
    for rid in isolated_ids(src):
        n -= len(
            src.execute(
                "SELECT 1 FROM events_raw WHERE id = ? AND (session_id < ? OR (session_id = ? AND id <= ?))",
                (rid, at.session, at.session, at.last_id),
            ).fetchall()
        )
    return n


def rebuild_projections(
    src: Db,
    dst: Db,
    *,
    batch_size: int = 5000,
    origin_order: str = "log",
    ctx: Ctx | None = None,
    watchdog_window_s: int = WATCHDOG_WINDOW_S,
    as_of: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    resume: Folded | None = None,
    on_batch: Callable[[Db, Folded], None] | None = None,
    guard: Callable[[Db], None] | None = None,
) -> int:
    """Re-project every session of ``src``'s log into ``dst`` (migrated, projections empty, or as a
    rebuild that stopped at ``resume`` left them).

    Args:
        src: connection whose ``events_raw`` is read (read-only use).
        dst: connection whose projection tables are written, one transaction per batch.
        batch_size: int, log rows folded per batch.
        origin_order: ``log`` (by id), ``origin`` (file, then offset) or ``reverse`` (both descending);
            sessions are visited in the opposite order for ``reverse``.
        ctx: instance / host ids stamped on edges (must match the live ingester's to compare).
        watchdog_window_s: int, seconds, when the log records no window (``logged_window``).
        as_of: canonical UTC for the watchdog; default the newest ``received_at`` in the log not after the clock.
        progress: called with (log rows folded so far, log rows to fold) after each written batch.
        resume: where a rebuild of the same log into ``dst`` stopped (what its last ``on_batch``
            committed; ``log`` order only): the rows it folded are not written again. Its session's
            state is folded again from those rows, in the same batches, so every later batch writes
            what the uninterrupted rebuild writes.
        on_batch: called inside each batch's transaction with how far the rebuild has folded once it
            commits (a checkpoint committed with the rows it describes).
        guard: called first in every transaction the rebuild writes into ``dst``: what it raises
            rolls the transaction back and stops the rebuild.

    Returns:
        int, log rows folded (with ``resume``, those folded before it too).

    Raises:
        ValueError: ``resume`` with another order than ``log``, or naming a session not in the log.
    """
    ctx = ctx or Ctx()
    watchdog_window_s = logged_window(src) or watchdog_window_s
    sess_order = "DESC" if origin_order == "reverse" else "ASC"
    sids = [
        str(r[0])
        for r in src.execute(
            f"SELECT DISTINCT session_id FROM events_raw WHERE session_id IS NOT NULL ORDER BY 1 {sess_order}"
        )
    ]
    if resume is not None and origin_order != "log":
        raise ValueError("a rebuild resumes in log order only")
    first = 0 if resume is None else sids.index(resume.session)
    skip = isolated_ids(src)
    todo = 0
    total = 0 if resume is None else resume.rows
    if progress is not None:
        todo = int(scalar(src, "SELECT count(*) FROM events_raw WHERE session_id IS NOT NULL") or 0)
        progress(total, todo)
    states: dict[str, SessionState] = {}
    pending: list[SessionWork] = []
    pending_n = 0
    at: Folded | None = None
    for sid in sids[first:]:

        def history(sid: str = sid) -> list[LogRow]:
            return _all_rows(src, sid, skip)

        done_to = resume.last_id if resume is not None and sid == resume.session else 0
        if done_to and not _rows_after(src, sid, done_to):
            continue  # folded to its end before the stop
        for last_id, batch in _batches(src, sid, _order_sql(origin_order), batch_size, skip):
            if last_id <= done_to:
                # folded and written before the stop: only the session's state is needed again
                states[sid], _ = projector.fold(states.get(sid), sid, batch, ctx, history)
                continue
            pending.append((sid, batch, history))
            pending_n += len(batch)
            total += len(batch)
            at = Folded(sid, last_id, total)
            if pending_n >= batch_size:
                _flush(src, dst, states, pending, ctx, at, on_batch, guard)
                pending, pending_n = [], 0
                if progress is not None:
                    progress(total, todo)
                for done in [k for k in states if k != sid]:
                    del states[done]  # folded and written: only the current session's state is needed
    _flush(src, dst, states, pending, ctx, at, on_batch, guard)
    if progress is not None:
        progress(total, total)  # isolated rows were counted in the plan and never folded: done
    if as_of is None:
        # capped at the clock as live (``watchdog_pass.reference``): a time read while the clock was
        # ahead is not the log's now
        as_of = newest_before(src, clock_bound(time.time_ns())) or None
    if as_of is not None:
        a = as_of

        def final(c: Db) -> None:
            if guard is not None:
                guard(c)
            watchdog_pass(c, a, watchdog_window_s)

        write_txn(dst, final)
    return total


def _batches(src: Db, sid: str, order: str, batch_size: int, skip: set[int]) -> Iterable[tuple[int, list[LogRow]]]:
    """The session's log rows in ``order``, ``batch_size`` at a time, isolated ones (``skip``) left
    out, each batch with the log id of its last row (isolated or not)."""
    cur = src.execute(f"SELECT {LOG_COLUMNS} FROM events_raw WHERE session_id = ? ORDER BY {order}", (sid,))
    while batch := [row_from_db(src, r) for r in itertools.islice(cur, batch_size)]:
        yield batch[-1].id, [r for r in batch if r.id not in skip] if skip else batch


def _rows_after(src: Db, sid: str, last_id: int) -> bool:
    """The session has log rows after ``last_id``."""
    return bool(
        src.execute("SELECT 1 FROM events_raw WHERE session_id = ? AND id > ? LIMIT 1", (sid, last_id)).fetchall()
    )


def _all_rows(src: Db, sid: str, skip: set[int]) -> list[LogRow]:
    """Every log row of the session by id, isolated ones (``skip``) left out: a refold's history."""
    cur = src.execute(f"SELECT {LOG_COLUMNS} FROM events_raw WHERE session_id = ? ORDER BY id", (sid,))
    return [r for r in (row_from_db(src, x) for x in cur) if r.id not in skip]


def _flush(
    src: Db,
    dst: Db,
    states: dict[str, SessionState],
    pending: list[SessionWork],
    ctx: Ctx,
    at: Folded | None,
    on_batch: Callable[[Db, Folded], None] | None,
    guard: Callable[[Db], None] | None = None,
) -> None:
    """Fold the pending rows into ``dst`` in one transaction (summaries look their leaf up in ``src``),
    ``on_batch`` told there how far the rebuild will have folded (``at``) once it commits, ``guard``
    called first."""

    def step(c: Db) -> None:
        if guard is not None:
            guard(c)
        fold_into(c, states, pending, ctx, log=src)
        if on_batch is not None and at is not None:
            on_batch(c, at)

    write_txn(dst, step)


def reproject_sessions(
    conn: Db,
    sids: Iterable[str],
    *,
    ctx: Ctx | None = None,
    cache: FoldCache | None = None,
    watchdog_window_s: int = WATCHDOG_WINDOW_S,
) -> int:
    """Re-project these sessions from their log rows, in one write transaction.

    Used when a checkpoint is no longer trusted because the session it stands for is gone from
    the projections while its log rows are still there (SPEC §7): re-reading the file inserts
    nothing (the keys exist), so nothing would be folded. Folding every row of the session from
    an empty state equals what any order of ingest produced (the projector's order independence).

    Args:
        conn: a migrated connection (written).
        sids: session ids.
        ctx: instance / host ids stamped on edges.
        cache: the caller's fold cache: these sessions' states are replaced by the fresh ones.
        watchdog_window_s: int, seconds.

    Returns:
        int, log rows folded.
    """
    todo = sorted(set(sids))
    if not todo:
        return 0
    ctx = ctx or Ctx()
    folded = 0

    def run(c: Db) -> None:
        nonlocal folded
        states: dict[str, SessionState] = {}
        work: list[SessionWork] = []
        for sid in todo:
            rows = session_rows(c, sid)
            if cache is not None:
                cache.take(sid)
            if rows:
                work.append((sid, rows, given(rows)))
                folded += len(rows)
        fold_into(c, states, work, ctx)
        if cache is not None:
            for sid, folded_rows, _ in work:
                cache.put(sid, states[sid], folded_rows[-1].id)
        got = c.execute("SELECT value FROM meta WHERE key = 'log_as_of'").fetchall()
        if got and isinstance(got[0][0], str):
            as_of = reference(c, got[0][0], clock_bound(time.time_ns()))
            if as_of:
                watchdog_pass(c, as_of, effective_window(c, watchdog_window_s))

    write_txn(conn, run)
    return folded
