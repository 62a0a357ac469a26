"""Keeping live projections in step with the projector's rules (SPEC §4, §7).

Projections are a pure function of the log *and of the projector's rules*. When the
rules change (``ingestd.core.revision.PROJECTION_REVISION`` is bumped), projections
written by the older rules would disagree with a replay. On first open by a writer,
a database whose ``meta.projection_revision`` differs is re-projected from its log:
every projection table is cleared and rebuilt (prune receipts honoured, so nothing
pruned comes back), then the revision is recorded. A crash or Ctrl-C part-way leaves the old
revision recorded and ``meta.reprojecting`` set (readers say the projections are partial and to
run ``migrate`` again), so the next writer simply starts over. A database projected by a newer
ingestd (a higher revision) is refused, never re-projected with these older rules.
"""

from __future__ import annotations

from pathlib import Path

import apsw

from ingestd.core.revision import PROJECTION_REVISION
from ingestd.core.touch import Ctx
from ingestd.core.watchdog import WATCHDOG_WINDOW_S
from ingestd.errors import MigrationError
from ingestd.ingest.rebuild import rebuild_projections
from ingestd.retention import prune as pr
from ingestd.store.connection import connect, write_txn
from ingestd.store.projrev import REPROJECTING, UPGRADE, is_newer, stored_revision

__all__ = ["PROJECTION_TABLES", "ensure_current", "stored_revision"]

# Children before parents (agents reference sessions); the rollup follows token_usage.
PROJECTION_TABLES = (
    "events",
    "compactions",
    "tool_calls",
    "orchestration_edges",
    "token_usage",
    "agents",
    "summaries",
    "sessions",
)


def ensure_current(
    conn: apsw.Connection,
    db_path: Path,
    *,
    ctx: Ctx,
    watchdog_window_s: int = WATCHDOG_WINDOW_S,
) -> int | None:
    """Re-project the whole log when the projector's rules changed since it was projected.

    Args:
        conn: the migrated write connection of ``db_path``, outside a transaction.
        db_path: the database file (a second, read-only connection reads the log).
        ctx: the database identity stamped on edges.
        watchdog_window_s: int, seconds.

    Returns:
        None when the projections were current; else the number of log rows re-projected.

    Raises:
        MigrationError: the database was projected by a newer ingestd (nothing is changed).

    Side effects:
        Clears and rebuilds every projection table (short transactions), then records
        ``meta.projection_revision``.
    """
    stored = stored_revision(conn)
    if stored == str(PROJECTION_REVISION):
        return None
    if is_newer(stored):
        raise MigrationError(
            f"the database at {db_path} was projected by a newer ingestd (projection revision {stored} > "
            f"{PROJECTION_REVISION}): {UPGRADE}; this one will not re-project it with older rules",
            path=str(db_path),
        )
    has_log = bool(conn.execute("SELECT 1 FROM events_raw LIMIT 1").fetchall())
    folded = _reproject(conn, db_path, ctx=ctx, watchdog_window_s=watchdog_window_s) if has_log else 0
    write_txn(conn, _record_current)
    return folded


def _reproject(conn: apsw.Connection, db_path: Path, *, ctx: Ctx, watchdog_window_s: int) -> int:
    """Mark the re-projection, clear every projection table, rebuild them from the log of
    ``db_path`` (read through a second, read-only connection) and re-apply the prune receipts;
    the number of log rows folded."""

    def clear(c: apsw.Connection) -> None:
        c.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (REPROJECTING, str(PROJECTION_REVISION)),
        )
        for table in PROJECTION_TABLES:
            c.execute(f"DELETE FROM {table}")

    write_txn(conn, clear)
    src = connect(db_path, readonly=True)
    try:
        folded = rebuild_projections(src, conn, ctx=ctx, watchdog_window_s=watchdog_window_s)
        recs = pr.receipts(src)
    finally:
        src.close()
    if recs:
        write_txn(conn, lambda c: pr.apply_receipts(c, recs))
    return folded


def _record_current(c: apsw.Connection) -> None:
    """Record this ingestd's projection revision and drop the re-projection marker."""
    c.execute(
        "INSERT INTO meta (key, value) VALUES ('projection_revision', ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(PROJECTION_REVISION),),
    )
    c.execute("DELETE FROM meta WHERE key = ?", (REPROJECTING,))
