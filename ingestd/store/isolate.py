"""A batch the database refuses never takes its neighbours down (SPEC §12 "No input stops the pipeline").

``apply_isolating`` wraps ``ingestd.store.writer.apply_batch``:

- a **transient** refusal (the database is busy or locked past the busy timeout, the disk is
  full, an I/O error) is retried with exponential backoff; while it lasts the component is
  *stalled*, reported to the backoff's ``StallReport`` (``ingestd.store.stall``; in the daemon its
  ``Health``: ``/api/health``, ``/api/status`` and, through the mirror file, ``ingestd status``);
- any other refusal (a constraint or guard trigger, something the core's validation did not
  foresee) splits the batch in halves until the failing row is alone; that row is then
  appended *without its projection* and quarantined with the database's message
  (``writer.quarantine_marker``), so every other row of the batch, file and root commits.
  The checkpoints travel with the last part, so a crash in between re-reads (keys make it
  harmless) instead of skipping lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import apsw

from ingestd.core.records import NewLogRow
from ingestd.core.rows import Checkpoint
from ingestd.core.touch import Ctx
from ingestd.core.watchdog import WATCHDOG_WINDOW_S
from ingestd.errors import BusyError, StorageError
from ingestd.logs import get_logger
from ingestd.store import stall
from ingestd.store.foldcache import FoldCache
from ingestd.store.logrows import quarantine_marker
from ingestd.store.payload_blocks import PreBlocks
from ingestd.store.writer import BatchResult, Prefold, apply_batch

log = get_logger("ingestd.store.isolate")

# apsw exception names (``StorageError.context["cause"]``) that say "try again later".
TRANSIENT_CAUSES = frozenset({"BusyError", "LockedError", "FullError", "IOError"})
# ... and those that are about the database, not about any row (read-only, corrupt, not a
# database, no permission): splitting the batch cannot help, the error is raised as it is.
DATABASE_CAUSES = frozenset(
    {"ReadOnlyError", "CorruptError", "NotADBError", "PermissionsError", "CantOpenError", "AuthError", "NoLFSError"}
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
    conn: apsw.Connection,
    rows: Sequence[NewLogRow],
    *,
    checkpoints: Iterable[Checkpoint] = (),
    component: str = "ingest",
    backoff: Backoff | None = None,
    ctx: Ctx | None = None,
    cache: FoldCache | None = None,
    watchdog_window_s: int = WATCHDOG_WINDOW_S,
    prefold: Prefold | None = None,
    pre_blocks: PreBlocks | None = None,
) -> BatchResult:
    """``apply_batch`` that retries transient refusals and isolates the rows the database refuses.

    Args:
        conn, rows, checkpoints, ctx, cache, watchdog_window_s: as ``apply_batch``.
        prefold: as ``apply_batch``, for the whole batch only: once it is split, its parts are
            folded by ``apply_batch`` (and the run's later prefolds refused: ``PrefoldGate``).
        pre_blocks: as ``apply_batch``, for the whole batch only (a part compresses its own).
        component: str, the part a stall is reported under (``ingest``, ``tailer``, ``writer``).
        backoff: retry policy (default ``Backoff()``).

    Returns:
        ``BatchResult`` summed over the parts (``isolated`` lists the quarantined keys).

    Raises:
        StorageError: a transient refusal outlived ``backoff``, or a refusal that is not about
            any row (the checkpoints or the transaction itself).
    """
    iso = _Isolator(conn, component, backoff or Backoff(), ctx, cache, watchdog_window_s, prefold, pre_blocks)
    iso.go(list(rows), list(checkpoints))
    return iso.total


@dataclass
class _Isolator:
    """One ``apply_isolating`` call: its arguments and the ``BatchResult`` summed over its parts."""

    conn: apsw.Connection
    component: str
    policy: Backoff
    ctx: Ctx | None
    cache: FoldCache | None
    watchdog_window_s: int
    prefold: Prefold | None = None  # for the whole batch, until it is split
    pre_blocks: PreBlocks | None = None  # likewise
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
                prefold=self.prefold,
                pre_blocks=self.pre_blocks,
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
        if self.prefold is not None:
            self.prefold.gate.refused = True
            self.prefold = None
        self.pre_blocks = None
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
