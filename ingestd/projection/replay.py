"""``ingestd replay``: the projections are a pure function of the log (SPEC §1, §12).

1. Snapshot the live database with the backup API (one consistent read, so the
   daemon can keep writing; everything below reads the snapshot).
2. Rebuild every projection from the snapshot's ``events_raw`` alone into two
   fresh migrated databases, with different batch sizes and reversed origin
   order (``ingestd.projection.rebuild.rebuild_projections``), copying the price rows
   first (they are operator data, not log) and honouring prune receipts after
   (``ingestd.store.pruned.apply_receipts``: what prune removed stays removed).
3. Compare canonical dumps of every projection table (every column, ordered by
   primary key), streamed: a per-table digest first, and only for a table whose
   digests differ, a merge walk that materialises the first differing rows.

Memory is bounded by the rebuild and one row per stream; disk needs three copies.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import apsw

from ingestd.errors import StorageError
from ingestd.projection.dump import TABLES, Comparison, compare
from ingestd.retention.backup import copy_database
from ingestd.store import pruned
from ingestd.store.connection import (
    Db,
    connect,
    connect_for_check,
    on_read_only_media,
    storage_errors,
    translate,
    write_txn,
)
from ingestd.store.identity import stored_identity
from ingestd.store.migrate import migrate

FIRST_BATCH_SIZE = 5000
SECOND_BATCH_SIZE = 317  # small and prime, so batch boundaries fall elsewhere
# Below this many log rows the two rebuilds run in this process: starting two Python processes costs
# about 0.7 s (wall and CPU), more than both rebuilds of a small log (45 rows: 0.1 s serial, 0.85 s in
# processes); near 8,000 rows (the real corpus) the two ways take the same wall time.
PARALLEL_MIN_ROWS = 5000


class Rebuilder(Protocol):
    """``rebuild_projections(src, dst, *, batch_size, origin_order)`` (the ingestion side)."""

    def __call__(self, src: Db, dst: Db, /, *, batch_size: int, origin_order: str) -> object: ...


def _scratch_db(path: Path) -> Db:
    """A fresh, migrated database for a rebuild. Durability is irrelevant here: it is thrown away."""
    try:
        conn = Db(str(path))
        conn.execute("PRAGMA journal_mode=MEMORY")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA foreign_keys=ON")
    except apsw.Error as e:
        raise translate(e) from e
    migrate(conn)
    return conn


def _copy_prices(src: Db, dst: Db) -> None:
    """Make ``dst``'s price rows exactly the source's (operator rows included), every column of them:
    the price dimensions (long-context threshold and rates, speed multipliers, web search fee) decide
    the rollup's tier and the cost as much as the five rates do."""
    cols = [str(r[1]) for r in dst.execute("PRAGMA table_info(model_pricing)").fetchall()]
    have = {str(r[1]) for r in src.execute("PRAGMA table_info(model_pricing)").fetchall()}
    cols = [c for c in cols if c in have]
    names = ", ".join(cols)
    rows = src.execute(f"SELECT {names} FROM model_pricing").fetchall()

    def body(c: Db) -> None:
        c.execute("DELETE FROM model_pricing")
        c.executemany(f"INSERT INTO model_pricing ({names}) VALUES ({', '.join('?' * len(cols))})", rows)

    write_txn(dst, body)


def rebuild_into(src: Db, dst: Db, rebuilder: Rebuilder, *, batch_size: int, origin_order: str) -> int:
    """Prices, then the projections from ``src``'s log, then prune receipts, into ``dst``.

    Returns:
        Rows removed by prune receipts.
    """
    _copy_prices(src, dst)
    rebuilder(src, dst, batch_size=batch_size, origin_order=origin_order)
    recs = pruned.receipts(src)
    if not recs:
        return 0
    return write_txn(dst, lambda c: pruned.apply_receipts(c, recs))


def live_ctx(conn: Db) -> tuple[str, str] | None:
    """The ``(instance, host_id)`` the live projector stamped on edges, so a rebuild stamps the same.

    ``meta`` keys ``instance`` and ``host_id`` when present; else the most common pair on the live
    ``orchestration_edges``; None when there is neither. Read-only.
    """
    meta = stored_identity(conn)
    if "instance" in meta and "host_id" in meta:
        return meta["instance"], meta["host_id"]
    rows = conn.execute(
        "SELECT instance, host_id FROM orchestration_edges GROUP BY 1, 2 ORDER BY count(*) DESC, 1, 2 LIMIT 1"
    ).fetchall()
    return (str(rows[0][0]), str(rows[0][1])) if rows else None


def default_rebuilder(ctx: tuple[str, str] | None = None) -> Rebuilder:
    """``rebuild.rebuild_projections`` with the live ``(instance, host_id)`` (the ingestion side's)."""
    from ingestd.core.touch import Ctx
    from ingestd.projection.rebuild import rebuild_projections

    the_ctx = Ctx(instance=ctx[0], host_id=ctx[1]) if ctx is not None else Ctx()

    def run(src: Db, dst: Db, *, batch_size: int, origin_order: str) -> object:
        return rebuild_projections(src, dst, batch_size=batch_size, origin_order=origin_order, ctx=the_ctx)

    return run


# The rebuild processes' nice value: as low a priority as the daemon's tailer thread
# (``ingestd.daemon.ingestrun.INGEST_NICE``). At the default priority two rebuilds took both cores
# from a tailer holding the write lock at nice 10, and the hooks waiting behind its transaction
# were answered 503 after 2 s, one per replay on a loaded machine. A check yields to
# the live daemon; alone on the machine it runs as fast as before. (The tailer's transactions now
# run at the daemon's priority, only its reading at nice 10: ``ingestd.daemon.ingestrun``.)
REBUILD_NICE = 10


def _yield_to_daemon() -> None:
    """Lower this process's priority to ``REBUILD_NICE`` (never raise it); a no-op where not allowed."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, 0, max(os.getpriority(os.PRIO_PROCESS, 0), REBUILD_NICE))


def _rebuild_file(
    snapshot: str, dst_path: str, batch_size: int, origin_order: str, ctx: tuple[str, str] | None
) -> float:
    """Child-process entry: rebuild ``snapshot``'s projections into a new ``dst_path``; seconds taken.
    Runs at ``REBUILD_NICE`` (side effect on the calling process)."""
    _yield_to_daemon()
    t = time.monotonic()
    src = Db(snapshot, flags=apsw.SQLITE_OPEN_READONLY)
    dst = _scratch_db(Path(dst_path))
    try:
        rebuild_into(src, dst, default_rebuilder(ctx), batch_size=batch_size, origin_order=origin_order)
    finally:
        dst.close()
        src.close()
    return time.monotonic() - t


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """Outcome of ``replay``.

    Attributes:
        comparison: Comparison of ``live``, ``replay_a``, ``replay_b``.
        log_rows: int, ``events_raw`` rows in the snapshot.
        receipts: int, prune receipts honoured.
        elapsed_s: dict[str, float], per phase (``snapshot``, ``rebuild_a``, ``rebuild_b``, ``compare``).
    """

    comparison: Comparison
    log_rows: int
    receipts: int
    elapsed_s: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        """JSON shape."""
        doc = self.comparison.to_json()
        doc.update(
            {
                "log_rows": self.log_rows,
                "receipts": self.receipts,
                "elapsed_s": {k: round(v, 3) for k, v in self.elapsed_s.items()},
            }
        )
        return doc


def replay(
    db_path: Path,
    *,
    rebuilder: Rebuilder | None = None,
    workdir: Path | None = None,
    batch_sizes: tuple[int, int] = (FIRST_BATCH_SIZE, SECOND_BATCH_SIZE),
    on_phase: Callable[[str], None] | None = None,
    on_rows: Callable[[int], None] | None = None,
    parallel_min_rows: int = PARALLEL_MIN_ROWS,
) -> ReplayResult:
    """Double replay of ``db_path`` compared with its live projections. Reads the live db once (snapshot).

    Args:
        db_path: the live database (may be in use by the daemon).
        rebuilder: ``rebuild_projections``; default ``default_rebuilder()``.
        workdir: where the snapshot and the two rebuilds go (default a temp dir next to the database,
            removed afterwards).
        batch_sizes: the two rebuilds' batch sizes.
        on_phase: called with each phase's name as it starts (progress).
        on_rows: called with counts of rows dumped (progress).
        parallel_min_rows: the two default rebuilds run in two processes (not with a custom
            ``rebuilder``) when the log holds at least this many rows; else one after the other
            here (the same rebuilds; ``sys.maxsize``: always here).

    Raises:
        StorageError: a database could not be read or written.
    """

    run = _Run(Path(tempfile.mkdtemp(prefix=".ingestd-replay-", dir=workdir or db_path.parent)), on_phase)
    try:
        snap = run.snapshot(db_path)
        with storage_errors():
            log_rows = int(str(snap.execute("SELECT count(*) FROM events_raw").fetchall()[0][0]))
        recs = pruned.receipts(snap)
        plan = (("replay_a", batch_sizes[0], "origin"), ("replay_b", batch_sizes[1], "reverse"))
        if rebuilder is None and log_rows >= parallel_min_rows:
            sides = [("live", snap), *run.rebuild_parallel(snap, plan)]
        else:
            build = rebuilder if rebuilder is not None else default_rebuilder(live_ctx(snap))
            sides = [("live", snap), *run.rebuild_serial(snap, plan, build)]
        t = run.phase("compare")
        comparison = compare(sides, on_rows=on_rows)
        run.elapsed["compare"] = time.monotonic() - t
    except apsw.Error as e:
        raise translate(e) from e
    finally:
        run.close()
    return ReplayResult(comparison, log_rows, len(recs), run.elapsed)


# (side name, batch size, origin order) of each rebuild
Plan = tuple[tuple[str, int, str], ...]


@dataclass
class _Run:
    """One replay's scratch directory, open connections and phase timings."""

    tmp: Path
    on_phase: Callable[[str], None] | None
    elapsed: dict[str, float] = field(default_factory=dict)
    opened: list[Db] = field(default_factory=list)

    def phase(self, name: str) -> float:
        """Announce a phase; its start time."""
        if self.on_phase is not None:
            self.on_phase(name)
        return time.monotonic()

    def snapshot(self, db_path: Path) -> Db:
        """Copy the live database (backup API) and open the copy read-only."""
        t = self.phase("snapshot")
        # read only on a mounted backup; else a -wal a kill -9 left stays as it is
        live_conn = connect(db_path, readonly=True) if on_read_only_media(db_path) else connect_for_check(db_path)
        try:
            copy_database(live_conn, self.tmp / "snapshot.db")
        finally:
            live_conn.close()
        snap = Db(str(self.tmp / "snapshot.db"), flags=apsw.SQLITE_OPEN_READONLY)
        self.opened.append(snap)
        self.elapsed["snapshot"] = time.monotonic() - t
        return snap

    def rebuild_parallel(self, snap: Db, plan: Plan) -> list[tuple[str, Db]]:
        """The default rebuilds, independent and CPU-bound (the projector is Python): one process each."""
        t = self.phase("rebuild replay_a and replay_b (two processes)")
        ctx = live_ctx(snap)
        snapshot = str(self.tmp / "snapshot.db")
        spawn = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=len(plan), mp_context=spawn) as pool:
            futures = [
                (name, pool.submit(_rebuild_file, snapshot, str(self.tmp / f"{name}.db"), size, order, ctx))
                for name, size, order in plan
            ]
            for name, fut in futures:
                self.elapsed[f"rebuild_{name[-1]}"] = fut.result()
        self.elapsed["rebuild_wall"] = time.monotonic() - t
        sides = []
        for name, _, _ in plan:
            dst = Db(str(self.tmp / f"{name}.db"), flags=apsw.SQLITE_OPEN_READONLY)
            self.opened.append(dst)
            sides.append((name, dst))
        return sides

    def rebuild_serial(self, snap: Db, plan: Plan, build: Rebuilder) -> list[tuple[str, Db]]:
        """The rebuilds one after the other in this process, with ``build``."""
        sides = []
        for name, size, order in plan:
            t = self.phase(f"rebuild {name} (batch {size}, {order} origin order)")
            dst = _scratch_db(self.tmp / f"{name}.db")
            self.opened.append(dst)
            rebuild_into(snap, dst, build, batch_size=size, origin_order=order)
            sides.append((name, dst))
            self.elapsed[f"rebuild_{name[-1]}"] = time.monotonic() - t
        return sides

    def close(self) -> None:
        """Close every connection and remove the scratch directory."""
        for c in self.opened:
            with contextlib.suppress(apsw.Error):
                c.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def total_rows(db_path: Path) -> int:
    """Rows the comparison will read (progress total): 3 x the projection rows of the live db. Read-only."""
    try:
        conn = connect(db_path, readonly=True)
    except StorageError:
        return 0
    try:
        with storage_errors():
            n = 0
            for t, _ in TABLES:
                n += int(str(conn.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]))
            return 3 * n
    finally:
        conn.close()
