"""Is this database's projection current? (read side of ``ingestd.ingest.reproject``).

Projections are a pure function of the log and of the projector's rules
(``PROJECTION_REVISION``). A database projected under older rules keeps its old rows until a
writer opens it (``ingest``, ``serve``, ``migrate``) and re-projects it. Until then the reports of
figures (``cost``, ``sessions``, ``tree``) refuse it, and ``status``, ``verify`` and ``replay`` say
so; all name the command that fixes it, instead of reporting old figures as if they were current.
Light on imports: readers must not pay for the projector.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import apsw

from ingestd.core.revision import PROJECTION_REVISION


@dataclass(frozen=True, slots=True)
class StaleProjection:
    """Projections computed under rules other than this build's.

    Attributes:
        stored: str, ``meta.projection_revision``.
        current: str, this build's ``PROJECTION_REVISION``.
        fix: str, the command that re-projects, e.g. ``ingestd migrate --db /path/to.db``.
        interrupted: bool, a re-projection started and did not finish (``REPROJECTING``): the
            projection tables hold part of the log.
    """

    stored: str
    current: str
    fix: str
    interrupted: bool = False

    @property
    def newer(self) -> bool:
        """The database was projected by a newer ingestd (a higher revision than this build's)."""
        return is_newer(self.stored)

    def message(self) -> str:
        """One sentence for a person: what is stale and what to run."""
        if self.interrupted:
            return (
                f"a re-projection of this database was interrupted: its projections hold only part of "
                f"its log until it is re-projected: run `{self.fix}` again"
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
        }


def is_newer(stored: str | None) -> bool:
    """``stored`` (a ``meta.projection_revision``) is a higher revision than this build's ``PROJECTION_REVISION``.

    A newer ingestd's rules are unknown to this one: re-projecting with this build's would
    downgrade the database (breaker4), so writers refuse it and readers say to upgrade.
    """
    return stored is not None and stored.isascii() and stored.isdigit() and int(stored) > PROJECTION_REVISION


UPGRADE = "upgrade ingestd"

REPROJECTING = "reprojecting"
"""``meta`` key set with the clearing of the projection tables and removed with the recording of
the revision (``ingestd.ingest.reproject``): present, a re-projection was interrupted (Ctrl-C)."""


def stored_revision(conn: apsw.Connection) -> str | None:
    """``meta.projection_revision``, or None. Read-only."""
    rows = conn.execute("SELECT value FROM meta WHERE key = 'projection_revision'").fetchall()
    return str(rows[0][0]) if rows else None


def stale_projection(conn: apsw.Connection, db_path: Path | str) -> StaleProjection | None:
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
    if conn.execute("SELECT 1 FROM meta WHERE key = ?", (REPROJECTING,)).fetchall():
        return StaleProjection(stored or "none", current, f"ingestd migrate --db {db_path}", interrupted=True)
    if stored is None or stored == current or not conn.execute("SELECT 1 FROM events_raw LIMIT 1").fetchall():
        return None
    fix = UPGRADE if is_newer(stored) else f"ingestd migrate --db {db_path}"
    return StaleProjection(stored, current, fix)
