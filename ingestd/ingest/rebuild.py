"""Projections rebuilt from ``events_raw`` alone (SPEC §4, used by ``ingestd replay``).

Folds every session's log rows into a fresh database's projection tables. The batch size and
the order rows are fed in are parameters so two rebuilds can differ in both: the projector's
order independence makes their projection tables byte-identical.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable

import apsw
import orjson

from ingestd.core import derive
from ingestd.core.records import LogRow
from ingestd.core.state import SessionState
from ingestd.core.touch import Ctx
from ingestd.store.connection import write_txn
from ingestd.store.writer import (
    LOG_COLUMNS,
    NOT_ISOLATED,
    WATCHDOG_WINDOW_S,
    FoldCache,
    effective_window,
    fold_refolding,
    row_from_db,
    watchdog,
    window_of,
    write_changes,
)

ORDERS = ("log", "origin", "reverse")


def _order_sql(origin_order: str) -> str:
    if origin_order == "log":
        return "id"
    if origin_order == "origin":
        return "origin, origin_gen, origin_offset, id"
    if origin_order == "reverse":
        return "origin DESC, origin_gen DESC, origin_offset DESC, id DESC"
    raise ValueError(f"origin_order must be one of {ORDERS}")


def logged_window(src: apsw.Connection) -> int | None:
    """The watchdog window the newest ``watchdog`` row of ``src``'s log records, else None. Read-only.

    Scans the log (no index on event_type): a rebuild reads all of it anyway.
    """
    for (payload,) in src.execute(
        "SELECT payload FROM events_raw WHERE source = 'ingestd' AND event_type = 'watchdog' ORDER BY id DESC"
    ):
        w = window_of(payload)
        if w is not None:
            return w
    return None


def isolated_ids(src: apsw.Connection) -> set[int]:
    """Log ids of the rows the database refused to project live, from their ``quarantine``
    marker rows (``ingestd.store.isolate``): a rebuild does not fold them either. Read-only."""
    out: set[int] = set()
    for (payload,) in src.execute(
        "SELECT payload FROM events_raw WHERE source = 'ingestd' AND event_type = 'quarantine'"
    ):
        try:
            rid = orjson.loads(payload).get("raw_event_id")
        except (orjson.JSONDecodeError, AttributeError):
            continue
        if isinstance(rid, int) and not isinstance(rid, bool):
            out.add(rid)
    return out


def rebuild_projections(
    src: apsw.Connection,
    dst: apsw.Connection,
    *,
    batch_size: int = 5000,
    origin_order: str = "log",
    ctx: Ctx | None = None,
    watchdog_window_s: int = WATCHDOG_WINDOW_S,
    as_of: str | None = None,
) -> int:
    """Re-project every session of ``src``'s log into ``dst`` (migrated, projections empty).

    Args:
        src: connection whose ``events_raw`` is read (read-only use).
        dst: connection whose projection tables are written, one transaction per batch.
        batch_size: int, log rows folded per batch.
        origin_order: ``log`` (by id), ``origin`` (file, then offset) or ``reverse`` (both descending);
            sessions are visited in the opposite order for ``reverse``.
        ctx: instance / host ids stamped on edges (must match the live ingester's to compare).
        watchdog_window_s: int, seconds, when the log records no window (``logged_window``).
        as_of: canonical UTC for the watchdog; default the newest ``received_at`` in the log.

    Returns:
        int, log rows folded.
    """
    ctx = ctx or Ctx()
    watchdog_window_s = logged_window(src) or watchdog_window_s
    order = _order_sql(origin_order)
    sess_order = "DESC" if origin_order == "reverse" else "ASC"
    sids = [
        str(r[0])
        for r in src.execute(
            f"SELECT DISTINCT session_id FROM events_raw WHERE session_id IS NOT NULL ORDER BY 1 {sess_order}"
        )
    ]
    total = 0
    skip = isolated_ids(src)
    pending = derive.Changes()
    pending_n = 0

    def flush() -> None:
        nonlocal pending, pending_n
        ch = pending

        def run(c: apsw.Connection) -> None:
            write_changes(c, ch, log=src)

        write_txn(dst, run)
        pending = derive.Changes()
        pending_n = 0

    for sid in sids:
        state: SessionState | None = None
        cur = src.execute(f"SELECT {LOG_COLUMNS} FROM events_raw WHERE session_id = ? ORDER BY {order}", (sid,))
        while batch := [row_from_db(r) for r in itertools.islice(cur, batch_size)]:
            if skip:
                batch = [r for r in batch if r.id not in skip]

            def load_all(sid: str = sid) -> list[LogRow]:
                return [
                    r
                    for r in map(
                        row_from_db,
                        src.execute(f"SELECT {LOG_COLUMNS} FROM events_raw WHERE session_id = ? ORDER BY id", (sid,)),
                    )
                    if r.id not in skip
                ]

            state, ch = fold_refolding(state, sid, batch, ctx, load_all)
            pending.extend(ch)
            pending_n += len(batch)
            total += len(batch)
            if pending_n >= batch_size:
                flush()
    flush()
    if as_of is None:
        v = src.execute("SELECT max(received_at) FROM events_raw").fetchall()[0][0]
        as_of = v if isinstance(v, str) else None
    if as_of is not None:
        a = as_of

        def wd(c: apsw.Connection) -> None:
            watchdog(c, a, watchdog_window_s)

        write_txn(dst, wd)
    return total


def reproject_sessions(
    conn: apsw.Connection,
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

    def run(c: apsw.Connection) -> None:
        nonlocal folded
        for sid in todo:
            rows = [
                row_from_db(r)
                for r in c.execute(
                    f"SELECT {LOG_COLUMNS} FROM events_raw WHERE session_id = ?{NOT_ISOLATED} ORDER BY id", (sid,)
                )
            ]
            if cache is not None:
                cache.take(sid)
            if not rows:
                continue
            state, ch = fold_refolding(None, sid, rows, ctx, functools.partial(list, rows))
            write_changes(c, ch)
            folded += len(rows)
            if cache is not None:
                cache.put(sid, state, rows[-1].id)
        got = c.execute("SELECT value FROM meta WHERE key = 'log_as_of'").fetchall()
        if got and isinstance(got[0][0], str):
            watchdog(c, got[0][0], effective_window(c, watchdog_window_s))

    write_txn(conn, run)
    return folded
