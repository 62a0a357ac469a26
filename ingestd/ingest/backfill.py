"""Reading transcripts past their committed offsets into the log (SPEC §7).

Per file: a fingerprint skip (size, mtime_ns, inode, ``INGEST_REVISION``) does no parsing
for an unchanged file; otherwise bytes past the committed offset are framed and appended
with ``ingestd.store.writer.apply_batch``, the checkpoint committed in the same transaction.
A file that shrank, or whose bytes just before the offset changed, is re-read from 0 under
a new generation, with a ``file_reset`` row (source ``ingestd``) in the log.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ingestd.core.framing import MAX_LINE_BYTES
from ingestd.core.revision import INGEST_REVISION
from ingestd.core.touch import Ctx
from ingestd.core.watchdog import WATCHDOG_WINDOW_S
from ingestd.ingest.readfile import Batcher, Plan, Progress, Tailing, idle, read_plans
from ingestd.ingest.scan import Found, discover, found_at, text_name
from ingestd.ingest.summary import Summary
from ingestd.logs import get_logger
from ingestd.projection.rebuild import reproject_sessions
from ingestd.store.connection import Db, connect
from ingestd.store.walcheckpoint import WAL_PAGES, WalCheckpointer

log = get_logger("ingestd.ingest")

# log rows per transaction: larger batches cost memory (a batch's rows and fold are held until its
# commit) and save nothing measurable past this size
BATCH_ROWS = 4000
# The collector's young-generation threshold while the files are read. Every line's decoded record
# is a few dozen containers living until its batch is written, none of them cyclic garbage: at the
# default threshold (700 allocations) the collector's passes over them take about 0.4 s of a 3.8 s
# cold ingest of 100 MB. Deferred, not disabled: cycles are still collected, this many allocations
# apart (a few MB of them at most).
YOUNG_COLLECT_OBJECTS = 100_000


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Raise the collector's young-generation threshold to ``YOUNG_COLLECT_OBJECTS`` for the block
    (a higher one, or 0: collection off, is kept); the thresholds before it are restored after."""
    before = gc.get_threshold()
    if 0 < before[0] < YOUNG_COLLECT_OBJECTS:
        gc.set_threshold(YOUNG_COLLECT_OBJECTS, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def ingest_roots(
    conn: Db,
    roots: Sequence[Path],
    *,
    now: str,
    ctx: Ctx | None = None,
    batch_rows: int = BATCH_ROWS,
    on_total: Callable[[int], None] | None = None,
    progress: Progress | None = None,
    paths: Sequence[Path] | None = None,
    watchdog_window_s: int = WATCHDOG_WINDOW_S,
    max_line_bytes: int = MAX_LINE_BYTES,
    checkpointer: bool = False,
    tailing: Tailing | None = None,
) -> Summary:
    """Ingest every transcript under ``roots`` that changed since its checkpoint.

    The daemon's tailer passes ``paths`` (the files a change names) and its ``tailing`` state:
    an append then costs work proportional to the new lines (no walk of the roots, no read of
    every checkpoint, no re-fold of the session from the log, no counts over the projections).

    Args:
        conn: a migrated connection. roots: projects roots.
        now: str, canonical UTC read time stamped on the new log rows.
        ctx: instance / host ids for edges. batch_rows: int, log rows per transaction.
        on_total: called once with the number of bytes to read; progress: with each read's bytes.
        paths: only these files (those under one of ``roots``), or None for every file under them.
        watchdog_window_s: int, seconds of inactivity before ``unknown``.
        max_line_bytes: int, bytes; a longer line is logged as an oversized marker row.
        checkpointer: copy the WAL into the database on a thread of its own (``_checkpointer``)
            rather than inside the commits that cross SQLite's threshold.
        tailing: the tailer's state kept across calls (``Tailing``); None: a one-shot ingest, which
            retries a transient refusal briefly (``Tailing.one_shot``) and fills the summary's totals.

    Returns ``Summary``; raises ``OSError`` (a root cannot be listed) or ``StorageError`` (refused).
    """
    t0 = time.perf_counter()
    summary = Summary()
    tail = tailing or Tailing.one_shot()
    b = Batcher(conn, ctx or Ctx(), summary, batch_rows, tail, watchdog_window_s)
    b.max_line_bytes = max_line_bytes
    plans, distrusted = _plan(b, conn, roots, paths, on_total, now)
    with _fewer_collections():
        _read_all(b, conn, plans, now, progress, checkpointer)
    if distrusted:
        _restore_sessions(conn, distrusted, b)
    summary.skipped = dict(b.skipped)
    if tailing is None:
        _totals(conn, summary)
    summary.elapsed_s = time.perf_counter() - t0
    return summary


def _read_all(
    b: Batcher, conn: Db, plans: Sequence[Plan], now: str, progress: Progress | None, checkpointer: bool
) -> None:
    """Read and write ``plans`` through ``b`` on this thread (with the WAL checkpointer's thread when
    asked). Returns once every batch is written and the thread is stopped; raises what a write raised."""
    ckpt = _checkpointer(conn) if checkpointer else None
    try:
        read_plans(b, plans, now, progress)
    finally:
        if ckpt is not None:
            ckpt.stop()
            conn.set_wal_hook(None)
            conn.wal_autocheckpoint(WAL_PAGES)


def _totals(conn: Db, summary: Summary) -> None:
    """Fill the summary's counts over the projections (sessions, agents, messages, quarantine)."""
    summary.sessions = _count(conn, "SELECT count(*) FROM sessions")
    summary.agents = _count(conn, "SELECT count(*) FROM agents")
    summary.messages = _count(conn, "SELECT count(*) FROM token_usage")
    summary.quarantined = {
        str(r): int(n) for r, n in conn.execute("SELECT reason, count(*) FROM quarantine GROUP BY 1 ORDER BY 1")
    }


def _checkpointer(conn: Db) -> WalCheckpointer | None:
    """WAL checkpoints on a thread of their own while an ingest writes (None for a memory db).

    SQLite's automatic checkpoint copies the WAL into the database inside the ``COMMIT`` that
    crosses its threshold, on the ingest's thread; the daemon's ``WalCheckpointer`` does it from its
    own connection instead, on the other core.
    """
    path = conn.filename
    if not path or path == ":memory:":
        return None
    ckpt = WalCheckpointer(lambda: connect(path))
    ckpt.attach(conn)
    ckpt.start()
    return ckpt


def _plan(
    b: Batcher,
    conn: Db,
    roots: Sequence[Path],
    paths: Sequence[Path] | None,
    on_total: Callable[[int], None] | None,
    now: str,
) -> tuple[list[Plan], list[str]]:
    """Plan the files to read (fingerprints, checkpoints): the plans in reading order and the
    origins whose unchanged checkpoint was distrusted (re-read from byte 0); ``on_total`` is told
    the bytes to read. An unchanged file whose last read held back a torn tail is read again once
    it has become idle past the grace since (``readfile._ended`` decides whether the tail is read)."""
    summary = b.summary
    plans: list[Plan] = []
    distrusted: list[str] = []
    total = 0
    # every session id, once per call (the tailer's few paths look theirs up by key instead)
    known = _session_ids(conn) if paths is None else None
    for root in roots:
        root_s = text_name(os.path.abspath(root))  # the checkpoints' key; files are opened by Found.path
        if paths is None:
            unreadable: list[tuple[str, str]] = []
            found = discover(root, unreadable)
            summary.dirs_unreadable += sum(1 for kind, _ in unreadable if kind == "dir")
            unexamined = sum(1 for kind, _ in unreadable if kind == "file")
            summary.files += unexamined  # found, but not even its size could be read
            summary.files_unreadable += unexamined
            cps = _checkpoints(conn, root_s, None)
        else:
            found = sorted(
                {f.origin: f for f in (found_at(root, p) for p in paths) if f is not None}.values(),
                key=lambda f: f.origin,
            )
            cps = _checkpoints(conn, root_s, [f.origin for f in found])
        summary.files += len(found)
        for f in found:
            cp = cps.get(f.origin)
            if cp is not None and cp[3] == INGEST_REVISION and (cp[4], cp[5], cp[6]) == (f.size, f.mtime_ns, f.inode):
                if _trusted(conn, f.origin, cp, known):
                    if not _tail_due(cp, f, now, b.tail_grace_s):
                        summary.files_unchanged += 1
                        continue
                    plans.append((root_s, f, cp))
                    continue
                log.info("checkpoint_distrusted", origin=f.origin, session_id=cp[7])
                distrusted.append(f.origin)
                cp = (cp[0], 0, "", *cp[3:])  # from byte 0 in the same generation: existing keys insert nothing
            plans.append((root_s, f, cp))
            total += max(0, f.size - (int(cp[1]) if cp is not None else 0))
    if on_total is not None:
        on_total(total)
    return plans, distrusted


_CHECKPOINT_COLUMNS = (
    "SELECT origin, origin_gen, committed_offset, head_hash, ingest_revision, size, mtime_ns, inode,"
    " session_id, updated_at FROM ingest_checkpoints WHERE root = ?"
)


def _tail_due(cp: tuple[Any, ...], f: Found, now: str, grace_s: float) -> bool:
    """Whether an unchanged file's held-back tail is to be looked at again: its checkpoint stopped
    short of the end, the file is idle past the grace now and was not yet when that checkpoint was
    written (then its tail was looked at idle already and was no JSON object)."""
    if int(cp[1]) >= f.size or not idle(f.mtime_ns, now, grace_s):
        return False
    return not idle(f.mtime_ns, str(cp[8]), grace_s)


def _checkpoints(conn: Db, root_s: str, origins: Sequence[str] | None) -> dict[Any, tuple[Any, ...]]:
    """origin -> checkpoint columns, for the whole root (``origins`` None) or just these origins."""
    if origins is None:
        return {r[0]: tuple(r[1:]) for r in conn.execute(_CHECKPOINT_COLUMNS, (root_s,))}
    out: dict[Any, tuple[Any, ...]] = {}
    for o in origins:
        for r in conn.execute(_CHECKPOINT_COLUMNS + " AND origin = ?", (root_s, o)):
            out[r[0]] = tuple(r[1:])
    return out


def _session_ids(conn: Db) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT id FROM sessions")}


def _trusted(conn: Db, origin: str, cp: tuple[Any, ...], known: set[str] | None) -> bool:
    """Whether an unchanged file's checkpoint may skip it (SPEC §7).

    "A checkpoint is trusted only while the session it stands for still exists": the
    checkpoint, the file's log rows and their projections commit together, so a session row
    that is missing means the projections were lost or replaced (projection tables emptied, a
    database assembled from another's tables) and skipping the file would keep it missing
    forever. A checkpoint with no session of its own (a flat 2.0.x ``agent-*.jsonl``, whose
    records name their parent session: FORMATS.md §0) is trusted while the log still holds its
    rows. A checkpoint that committed nothing (empty file, a lone torn line) stands for nothing.

    Args:
        origin: str, the file's origin; cp: the ``_checkpoints`` columns; known: every session
            id (one query per root), or None to look the session up by key.
    """
    gen, offset, sid = int(cp[0]), int(cp[1]), cp[7]
    if offset == 0:
        return True
    if sid is not None:
        if known is not None:
            return sid in known
        return bool(conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchall())
    return bool(conn.execute(_ANY_OF_ORIGIN_GEN, (origin, gen)).fetchall())


# A file's rows through the log's origin index (migration 0030).
_ANY_OF_ORIGIN_GEN = "SELECT 1 FROM events_raw WHERE origin = ? AND origin_gen = ? LIMIT 1"
_SESSIONS_OF_ORIGIN = "SELECT DISTINCT session_id FROM events_raw WHERE origin = ? AND session_id IS NOT NULL"


def _restore_sessions(conn: Db, origins: Sequence[str], b: Batcher) -> None:
    """Re-project the sessions of re-read files that still have no ``sessions`` row.

    The re-read appended nothing when the log already held the file's lines (same keys), so
    those sessions are folded again from the log (``rebuild.reproject_sessions``).
    """
    sids: set[str] = set()
    for o in sorted(set(origins)):
        sids.update(str(r[0]) for r in conn.execute(_SESSIONS_OF_ORIGIN, (o,)))
    missing = sids - _session_ids(conn)
    if missing:
        window = b.watchdog_window_s
        n = int(
            b.tail.run_write(
                lambda: reproject_sessions(conn, missing, ctx=b.ctx, cache=b.tail.cache, watchdog_window_s=window)
            )
        )
        log.info("sessions_reprojected", sessions=len(missing), rows=n)


def _count(conn: Db, sql: str) -> int:
    v: Any = conn.execute(sql).fetchall()[0][0]
    return int(v)
