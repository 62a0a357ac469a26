"""Keeping live projections in step with the projector's rules (SPEC §4, §7): stale, and re-projected.

Projections are a pure function of the log *and of the projector's rules*. When the
rules change (``ingestd.core.revision.PROJECTION_REVISION`` is bumped), projections
written by the older rules would disagree with a replay. On first open by a writer,
a database whose ``meta.projection_revision`` differs is re-projected from its log:
every projection table is cleared and rebuilt (prune receipts honoured, so nothing
pruned comes back). The revision re-projected to is recorded with the clearing, and
``meta.reprojecting`` is set from then until the end: a crash or Ctrl-C part-way leaves it set
(readers say the projections are partial and to run ``migrate`` again; a writer of any build takes
them for stale whatever revision is recorded, and an older ingestd, seeing a newer revision,
refuses to fold into them). Each batch commits, in its own transaction, how far the re-projection has
folded (``meta.reprojected_through``), so the next writer of the same build and schema goes on from
there; any other starts over. Of two writers re-projecting at once, the one that cleared or resumed
last owns it (``OWNER``, claimed in the transaction that decides where to start, checked in every
later one) and the other stops with an error before its next write. A database projected by a
newer ingestd (a higher revision) is refused, never re-projected with these older rules.

The read side (``stale``, ``StaleProjection``): a database projected under older rules keeps its
old rows until a writer opens it (``ingest``, ``serve``, ``migrate``) and re-projects it. Until then the reports of
figures (``cost``, ``sessions``, ``tree``) refuse it, and ``status``, ``verify`` and ``replay`` say
so; all name the command that fixes it, instead of reporting old figures as if they were current.
Light on imports: readers must not pay for the projector.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ingestd.core.revision import PROJECTION_REVISION
from ingestd.errors import MigrationError
from ingestd.store import pruned
from ingestd.store.connection import Db, connect, scalar, write_txn

if TYPE_CHECKING:
    from ingestd.core.touch import Ctx
    from ingestd.projection.rebuild import Folded

__all__ = ["PROJECTION_TABLES", "Reprojected", "ensure_current", "resumable", "stored_revision"]

# Children before parents (agents reference sessions); the rollup follows token_usage.
PROJECTION_TABLES = (
    "search_docs",
    "events",
    "rate_limit_samples",
    "otel_metric_points",
    "otel_requests",
    "compactions",
    "tasks",
    "prompts",
    "cc_model_usage",
    "tool_calls",
    "orchestration_edges",
    "token_usage",
    "agents",
    "summaries",
    "sessions",
)

# the projections that are views, and the table each is stored in
STORED_IN = {"search_docs": "search_doc_rows", "tool_calls": "tool_call_rows"}

BATCH_ROWS = 5000
"""Log rows folded per transaction of a re-projection: each commits its checkpoint too."""


@dataclass(frozen=True, slots=True)
class Reprojected:
    """What ``ensure_current`` re-projected.

    Attributes:
        log_rows: int, log rows the projections now hold folded (0: the log is empty).
        resumed_rows: int, of those, the rows an interrupted re-projection had folded, which this
            one went on from (0: it started from the beginning).
    """

    log_rows: int
    resumed_rows: int = 0


def ensure_current(
    conn: Db,
    db_path: Path,
    *,
    ctx: Ctx,
    watchdog_window_s: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = BATCH_ROWS,
) -> Reprojected | None:
    """Re-project the whole log when the projector's rules changed since it was projected.

    Args:
        conn: the migrated write connection of ``db_path``, outside a transaction.
        db_path: the database file (a second, read-only connection reads the log).
        ctx: the database identity stamped on edges.
        watchdog_window_s: int, seconds (None: the default window, ``WATCHDOG_WINDOW_S``).
        progress: called with (log rows re-projected so far, log rows to re-project) as it goes;
            resuming, the first call counts the rows the interrupted re-projection folded.
        batch_size: int, log rows folded per transaction.

    Returns:
        None when the projections were current; else what was re-projected, the rows an
        interrupted re-projection it went on from had folded counted apart (``resumable``).

    Raises:
        MigrationError: the database was projected by a newer ingestd (nothing is changed).

    Side effects:
        Clears and rebuilds every projection table (short transactions), or goes on with the
        rebuild an interrupted re-projection left (``resumable``), then records
        ``meta.projection_revision``.
    """
    stored = stored_revision(conn)
    # an interrupted re-projection left part of the log projected, whatever revision is recorded
    if stored == str(PROJECTION_REVISION) and not _marks(conn).get(REPROJECTING):
        return None
    if is_newer(stored):
        raise MigrationError(
            f"the database at {db_path} was projected by a newer ingestd (projection revision {stored} > "
            f"{PROJECTION_REVISION}): {UPGRADE}; this one will not re-project it with older rules",
            path=str(db_path),
        )
    if not conn.execute("SELECT 1 FROM events_raw LIMIT 1").fetchall():
        write_txn(conn, _record_current)
        return Reprojected(0)
    return _reproject(
        conn, db_path, ctx=ctx, watchdog_window_s=watchdog_window_s, progress=progress, batch_size=batch_size
    )


def _reproject(
    conn: Db,
    db_path: Path,
    *,
    ctx: Ctx,
    watchdog_window_s: int | None,
    progress: Callable[[int, int], None] | None,
    batch_size: int,
) -> Reprojected:
    """Mark the re-projection and clear every projection table (unless an interrupted one is
    ``resumable``), rebuild them from the log of ``db_path`` (read through a second, read-only
    connection), then re-apply the prune receipts and record the revision in one transaction."""
    # here, not at the top: the readers of ``stale_projection`` must not pay for the projector
    from ingestd.core.watchdog import WATCHDOG_WINDOW_S
    from ingestd.projection.rebuild import rebuild_projections
    from ingestd.store.upsert import CLEAR_SEARCH_INDEX

    window_s = WATCHDOG_WINDOW_S if watchdog_window_s is None else watchdog_window_s
    run = os.urandom(8).hex()  # this run's claim on the re-projection (``OWNER``)

    def clear(c: Db) -> None:
        _set_meta(c, OWNER, run)
        _set_meta(c, REPROJECTING, str(PROJECTION_REVISION))
        # the revision the tables are being rebuilt to, from the first row cleared: an older ingestd
        # refuses to write them (a newer one's), where its own revision would let it fold into them
        _set_meta(c, "projection_revision", str(PROJECTION_REVISION))
        c.execute("DELETE FROM meta WHERE key = ?", (REPROJECTED,))
        for table in PROJECTION_TABLES:
            c.execute(f"DELETE FROM {STORED_IN.get(table, table)}")
        c.execute(CLEAR_SEARCH_INDEX)  # the documents' index entries, with the documents

    def start(c: Db) -> Folded | None:
        # where to start decided in the transaction that claims it: a batch another writer commits
        # between a read and the claim is never cleared away or folded again
        at = resumable(c, batch_size=batch_size)
        if at is None:
            clear(c)
        else:
            _set_meta(c, OWNER, run)
        return at

    resume = write_txn(conn, start)

    def guard(c: Db) -> None:
        # a writer that started or resumed the re-projection after this one owns it now: what this
        # one would write next could undo the other's clearing, or record the tables whole early
        if scalar(c, "SELECT value FROM meta WHERE key = ?", (OWNER,)) != run:
            raise _taken(db_path)

    schema = _schema(conn)

    def checkpoint(c: Db, at: Folded) -> None:
        point = {"revision": PROJECTION_REVISION, "schema": schema, "batch_size": batch_size}
        _set_meta(
            c,
            REPROJECTED,
            orjson.dumps({**point, "session": at.session, "last_id": at.last_id, "rows": at.rows}).decode(),
        )

    src = connect(db_path, readonly=True)
    try:
        folded = rebuild_projections(
            src,
            conn,
            batch_size=batch_size,
            ctx=ctx,
            watchdog_window_s=window_s,
            progress=progress,
            resume=resume,
            on_batch=checkpoint,
            guard=guard,
        )
        recs = pruned.receipts(src)
    finally:
        src.close()

    def finish(c: Db) -> None:
        guard(c)
        # with the revision: a resume after the receipts would fold nothing and apply them again
        if recs:
            pruned.apply_receipts(c, recs)
        _record_current(c)

    write_txn(conn, finish)
    return Reprojected(folded, resume.rows if resume is not None else 0)


def resumable(conn: Db, *, batch_size: int = BATCH_ROWS) -> Folded | None:
    """How far the interrupted re-projection of ``conn`` folded, when this build can go on with it;
    else None (none was interrupted, or it must start over). Read-only.

    It can when it was for this build's rules (``meta.reprojecting``) and its checkpoint
    (``meta.reprojected_through``) names them, the schema as migrated now (a migration since may
    have rewritten its rows), the same batch size (the resumed session's state is folded again in
    the same batches), a log row of its session, and as many log rows up to it as it counts.
    """
    from ingestd.projection.rebuild import Folded, folded_by

    marks = _marks(conn)
    if marks.get(REPROJECTING) != str(PROJECTION_REVISION) or not isinstance(marks.get(REPROJECTED), str):
        return None
    try:
        point = orjson.loads(str(marks[REPROJECTED]))
        want = {"revision": PROJECTION_REVISION, "schema": _schema(conn), "batch_size": batch_size}
        if not isinstance(point, dict) or any(point.get(k) != v for k, v in want.items()):
            return None
        at = Folded(point["session"], point["last_id"], point["rows"])
    except (orjson.JSONDecodeError, KeyError):
        return None
    if not (isinstance(at.session, str) and type(at.last_id) is int and type(at.rows) is int):
        return None
    if not conn.execute(
        "SELECT 1 FROM events_raw WHERE id = ? AND session_id = ?", (at.last_id, at.session)
    ).fetchall():
        return None
    if folded_by(conn, at) != at.rows:
        return None  # the log up to the checkpoint is not the one folded (edited, or rows came or went)
    return at


def _taken(db_path: Path) -> MigrationError:
    """The error of a re-projection another writer took over (it goes on with it)."""
    return MigrationError(
        f"another ingestd took over the re-projection of {db_path} (a `migrate`, `ingest` or daemon started "
        "beside this one): it goes on with it, and this one stopped without writing more; once it is done "
        f"`ingestd migrate --db {db_path}` has nothing left to do",
        path=str(db_path),
    )


def _marks(conn: Db) -> dict[str, object]:
    """The re-projection's ``meta`` rows present (``REPROJECTING``, ``REPROJECTED``): key -> value. Read-only."""
    return dict(conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?)", (REPROJECTING, REPROJECTED)))


def _schema(conn: Db) -> int:
    """The newest migration applied to ``conn``. Read-only."""
    rows = conn.execute("SELECT max(id) FROM schema_version").fetchall()
    return int(rows[0][0] or 0)


def _set_meta(c: Db, key: str, value: str) -> None:
    """Upsert one ``meta`` row in the caller's transaction."""
    c.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def _record_current(c: Db) -> None:
    """Record this ingestd's projection revision and drop the re-projection's marker and checkpoint."""
    _set_meta(c, "projection_revision", str(PROJECTION_REVISION))
    c.execute("DELETE FROM meta WHERE key IN (?, ?, ?)", (REPROJECTING, REPROJECTED, OWNER))


@dataclass(frozen=True, slots=True)
class StaleProjection:
    """Projections computed under rules other than this build's.

    Attributes:
        stored: str, ``meta.projection_revision``.
        current: str, this build's ``PROJECTION_REVISION``.
        fix: str, the command that re-projects, e.g. ``ingestd migrate --db /path/to.db``.
        interrupted: bool, a re-projection started and did not finish (``REPROJECTING``): the
            projection tables hold part of the log.
        resumes: bool, it was this build's and committed a checkpoint (``REPROJECTED``): ``fix``
            goes on from there (unless the checkpoint is no longer valid: ``resumable``).
    """

    stored: str
    current: str
    fix: str
    interrupted: bool = False
    resumes: bool = False

    @property
    def newer(self) -> bool:
        """The database was projected to its end by a newer ingestd (a higher revision than this build's):
        its figures are whole, by rules this one does not know (an interrupted one's are not whole)."""
        return is_newer(self.stored) and not self.interrupted

    def message(self) -> str:
        """One sentence for a person: what is stale and what to run."""
        if self.interrupted and self.fix == UPGRADE:
            return (
                f"a re-projection of this database by a newer ingestd (projection revision {self.stored} > "
                f"{self.current}) was interrupted: its projections hold only part of its log until that "
                f"ingestd re-projects it: {UPGRADE}"
            )
        if self.interrupted:
            return (
                f"a re-projection of this database was interrupted: its projections hold only part of "
                f"its log until it is re-projected: run `{self.fix}` again"
                + (": it goes on from where it stopped" if self.resumes else "")
            )
        if self.newer:
            return (
                f"this database was projected by a newer ingestd (projection revision {self.stored} > "
                f"{self.current}); {self.fix}: figures read by this one may be wrong"
            )
        return (
            f"this database's projections were computed under the projector's rules revision "
            f"{self.stored} (this ingestd's is {self.current}): figures from them may be wrong "
            f"until it is re-projected from its log: run `{self.fix}`"
        )

    def to_json(self) -> dict[str, object]:
        """``{"stored_revision", "current_revision", "fix", "message"}``."""
        return {
            "stored_revision": self.stored,
            "current_revision": self.current,
            "fix": self.fix,
            "message": self.message(),
            "interrupted": self.interrupted,
            "resumes": self.resumes,
        }


def is_newer(stored: str | None) -> bool:
    """``stored`` (a ``meta.projection_revision``) is a higher revision than this build's ``PROJECTION_REVISION``.

    A newer ingestd's rules are unknown to this one: re-projecting with this build's would
    downgrade the database, so writers refuse it and readers say to upgrade.
    """
    return stored is not None and stored.isascii() and stored.isdigit() and int(stored) > PROJECTION_REVISION


UPGRADE = "upgrade ingestd"

REPROJECTING = "reprojecting"
"""``meta`` key set with the clearing of the projection tables and removed with the recording of
the revision (``ingestd.projection.reproject``): present, a re-projection was interrupted (Ctrl-C).
Its value is the revision it re-projected to."""

REPROJECTED = "reprojected_through"
"""``meta`` key: a re-projection's checkpoint, committed with each batch it describes and removed
with the recording of the revision. JSON: ``revision``, ``schema`` (newest migration),
``batch_size``, and the ``Folded`` (``session``, ``last_id``, ``rows``)."""


OWNER = "reprojection_owner"
"""``meta`` key: the run of ``_reproject`` that cleared or last resumed the re-projection (random hex),
set in that transaction and removed with the recording of the revision. Every transaction of a run
checks it first, so of two writers re-projecting at once only the one that claimed it last writes on;
the other stops with an error. Never a lock: a run killed leaves it, and the next one claims over it."""


def stored_revision(conn: Db) -> str | None:
    """``meta.projection_revision``, or None. Read-only."""
    rows = conn.execute("SELECT value FROM meta WHERE key = 'projection_revision'").fetchall()
    return str(rows[0][0]) if rows else None


def stale_projection(conn: Db, db_path: Path | str) -> StaleProjection | None:
    """The staleness of ``conn``'s projections, or None when they are current. Read-only.

    A database whose log is empty has nothing projected, so it is never stale. Nor is one with no
    revision recorded: every writer records it (``ensure_current``, since revision 1), so only a
    database from before that or one written by library calls directly (tests) lacks it; a writer
    still re-projects such a database on first open.

    Args:
        conn: a connection to a migrated database.
        db_path: the database's path, named in the fix.
    """
    stored = stored_revision(conn)
    current = str(PROJECTION_REVISION)
    marks = _marks(conn)
    if REPROJECTING in marks:
        if is_newer(stored):  # a newer ingestd's, which this one's writers refuse: that one goes on with it
            return StaleProjection(stored or "none", current, UPGRADE, interrupted=True)
        resumes = marks[REPROJECTING] == current and REPROJECTED in marks
        return StaleProjection(
            stored or "none", current, f"ingestd migrate --db {db_path}", interrupted=True, resumes=resumes
        )
    if stored is None or stored == current or not conn.execute("SELECT 1 FROM events_raw LIMIT 1").fetchall():
        return None
    fix = UPGRADE if is_newer(stored) else f"ingestd migrate --db {db_path}"
    return StaleProjection(stored, current, fix)
