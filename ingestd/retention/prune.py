"""Pruning the prunable projections (SPEC §8).

Only ``events`` (by default older than 90 days) and, with an explicit
acknowledgement that cost history is lost, ``token_usage`` may be pruned. The
protected tables are refused by name. Rows go in bounded batches ordered by
``(occurred_at, id)``, each batch in its own short ``BEGIN IMMEDIATE``
transaction, so a hook receiver waiting on the write lock waits at most one batch.

Every real run writes one ``prune_receipts`` row per target, created in the first
batch's transaction and brought up to date in each later one, so the receipt
always matches what is gone even if the run is interrupted. The receipt carries
the log watermark (``max(events_raw.id)`` when the run started): a replay drops
rebuilt rows the receipt covers and keeps rows of later log rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ingestd.core.timefmt import format_utc
from ingestd.errors import ConfigError
from ingestd.store.connection import Db, scalar, storage_errors, write_txn

PROTECTED: frozenset[str] = frozenset(
    {
        "events_raw",
        "sessions",
        "agents",
        "orchestration_edges",
        "model_pricing",
        "schema_version",
        "token_usage_rollup",
    }
)
# table → (time column, id column): the batch order is (time, id).
PRUNABLE: dict[str, tuple[str, str]] = {
    "events": ("occurred_at", "raw_event_id"),
    "token_usage": ("occurred_at", "id"),
}
DEFAULT_BATCH_ROWS = 2000


@dataclass(frozen=True, slots=True)
class PruneTarget:
    """One table to prune.

    Attributes:
        table: str, a key of ``PRUNABLE``.
        older_than_days: int, rows with ``occurred_at`` before ``now - days`` go.
    """

    table: str
    older_than_days: int


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What one target's run removed (or, in a dry run, would remove).

    Attributes:
        table: str.
        cutoff: str, canonical UTC; rows with ``occurred_at < cutoff`` go.
        rows: int, rows deleted (or that would be).
        keys: list[tuple[str, int]], ``(occurred_at, id)`` of each row, in deletion order.
        dry_run: bool.
        receipt_id: int | None, the ``prune_receipts`` row (None in a dry run).
        watermark: int | None, ``max(events_raw.id)`` when the run started.
        batches: int, write transactions used.
    """

    table: str
    cutoff: str
    rows: int
    keys: list[tuple[str, int]] = field(default_factory=list)
    dry_run: bool = False
    receipt_id: int | None = None
    watermark: int | None = None
    batches: int = 0

    def to_json(self, *, with_keys: bool = True) -> dict[str, object]:
        """JSON shape; ``keys`` as ``[occurred_at, id]`` pairs."""
        doc: dict[str, object] = {
            "target": self.table,
            "cutoff": self.cutoff,
            "rows": self.rows,
            "dry_run": self.dry_run,
            "receipt_id": self.receipt_id,
            "watermark": self.watermark,
            "batches": self.batches,
        }
        if with_keys:
            doc["keys"] = [list(k) for k in self.keys]
        return doc


def check_table(table: str) -> tuple[str, str]:
    """The (time, id) columns of a prunable table.

    Raises:
        ConfigError: the table is protected (refused by name) or not prunable.
    """
    if table in PROTECTED:
        raise ConfigError(
            f"refusing to prune {table}: it is protected (SPEC §8); only {', '.join(sorted(PRUNABLE))} can be pruned",
            table=table,
        )
    if table not in PRUNABLE:
        raise ConfigError(f"cannot prune {table!r}: prunable tables are {', '.join(sorted(PRUNABLE))}", table=table)
    return PRUNABLE[table]


def cutoff_for(now: datetime, days: int) -> str:
    """Canonical UTC ``now - days``. Pure."""
    return format_utc(now - timedelta(days=days))


def candidates(conn: Db, table: str, cutoff: str, batch_rows: int) -> Iterator[tuple[str, int]]:
    """Every ``(occurred_at, id)`` older than ``cutoff`` in deletion order, read page by page. Read-only."""
    tcol, icol = check_table(table)
    last: tuple[str, int] | None = None
    while True:
        if last is None:
            sql = f"SELECT {tcol}, {icol} FROM {table} WHERE {tcol} < ? ORDER BY {tcol}, {icol} LIMIT ?"
            params: tuple[object, ...] = (cutoff, batch_rows)
        else:
            sql = (
                f"SELECT {tcol}, {icol} FROM {table} WHERE {tcol} < ? AND ({tcol}, {icol}) > (?, ?) "
                f"ORDER BY {tcol}, {icol} LIMIT ?"
            )
            params = (cutoff, last[0], last[1], batch_rows)
        with storage_errors():
            page = [(str(r[0]), int(r[1])) for r in conn.execute(sql, params)]
        yield from page
        if len(page) < batch_rows:
            return
        last = page[-1]


def prune_table(
    conn: Db,
    table: str,
    *,
    now: datetime,
    older_than_days: int,
    dry_run: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    keep_keys: bool = True,
    on_batch: Callable[[int], None] | None = None,
) -> PruneResult:
    """Delete (or list, with ``dry_run``) the rows of ``table`` older than ``now - older_than_days``.

    Args:
        conn: a read-write connection.
        table: ``events`` or ``token_usage`` (callers must have checked the token_usage acknowledgement).
        now: the clock reading, aware datetime.
        older_than_days: int, days.
        dry_run: list the rows only; changes nothing.
        batch_rows: rows per write transaction.
        keep_keys: return every deleted row's key (False saves memory on huge runs).
        on_batch: called with the rows of each committed batch (progress).

    Returns:
        A ``PruneResult``; a real run has written its receipt.

    Raises:
        ConfigError: the table is protected or not prunable.
        StorageError: the database refused (batches already committed stay committed, with their receipt).
    """
    tcol, icol = check_table(table)
    if batch_rows < 1:
        raise ConfigError("batch size must be at least 1 row")
    cutoff = cutoff_for(now, older_than_days)
    if dry_run:
        keys = list(candidates(conn, table, cutoff, batch_rows))
        with storage_errors():
            mark = scalar(conn, "SELECT max(id) FROM events_raw")
        return PruneResult(table, cutoff, len(keys), keys, True, None, mark, 0)

    run = _Deletion(table, tcol, icol, cutoff, format_utc(now), batch_rows, keep_keys)
    batches = 0
    while True:
        n = write_txn(conn, run.batch)
        batches += 1
        if on_batch is not None and n:
            on_batch(n)
        if n < batch_rows:
            break
    return PruneResult(table, cutoff, run.total, run.kept, False, run.receipt_id, run.watermark, batches)


@dataclass(slots=True)
class _Deletion:
    """One real prune of ``table``: its receipt (written with the first batch) and running totals."""

    table: str
    tcol: str
    icol: str
    cutoff: str
    ran_at: str
    batch_rows: int
    keep_keys: bool
    total: int = 0
    kept: list[tuple[str, int]] = field(default_factory=list)
    receipt_id: int | None = None
    watermark: int | None = None

    def batch(self, c: Db) -> int:
        """Delete the next ``batch_rows`` rows (oldest first) inside the caller's transaction; rows deleted."""
        if self.receipt_id is None:
            self.watermark = scalar(c, "SELECT max(id) FROM events_raw")
            c.execute(
                "INSERT INTO prune_receipts (ran_at, target, cutoff, rows, dry_run, max_raw_event_id) "
                "VALUES (?, ?, ?, 0, 0, ?)",
                (self.ran_at, self.table, self.cutoff, self.watermark),
            )
            self.receipt_id = c.last_insert_rowid()
        select = (
            f"SELECT {self.tcol}, {self.icol} FROM {self.table} WHERE {self.tcol} < ?"
            f" ORDER BY {self.tcol}, {self.icol} LIMIT ?"
        )
        page = [(str(r[0]), int(r[1])) for r in c.execute(select, (self.cutoff, self.batch_rows))]
        c.executemany(f"DELETE FROM {self.table} WHERE {self.icol} = ?", [(k[1],) for k in page])
        self.total += len(page)
        c.execute("UPDATE prune_receipts SET rows = ? WHERE id = ?", (self.total, self.receipt_id))
        if self.keep_keys:
            self.kept.extend(page)
        return len(page)


@dataclass(frozen=True, slots=True)
class Policy:
    """What a prune run removes.

    Attributes:
        events_days: int | None, prune ``events`` older than this (None: keep all).
        token_usage_days: int | None, prune ``token_usage`` older than this (None, the default: never).
        acknowledge_cost_loss: bool, must be True when ``token_usage_days`` is set.
        only: tuple[str, ...], restrict to these tables (empty: every table the policy names).
    """

    events_days: int | None = 90
    token_usage_days: int | None = None
    acknowledge_cost_loss: bool = False
    only: tuple[str, ...] = ()


def targets(policy: Policy) -> list[PruneTarget]:
    """The tables a policy prunes, in a fixed order. Pure.

    Raises:
        ConfigError: a named table is protected or unknown, or token_usage is asked for without
            the acknowledgement.
    """
    for name in policy.only:
        check_table(name)
        if name == "token_usage" and policy.token_usage_days is None:
            raise ConfigError(
                "pruning token_usage needs --delete-token-usage-older-than DAYS and --i-understand-cost-history-is-lost"
            )
    out = []
    wanted = set(policy.only) or set(PRUNABLE)
    if policy.events_days is not None and "events" in wanted:
        out.append(PruneTarget("events", policy.events_days))
    if policy.token_usage_days is not None and "token_usage" in wanted:
        if not policy.acknowledge_cost_loss:
            raise ConfigError(
                "deleting token_usage loses cost history for good: pass --i-understand-cost-history-is-lost "
                "(or set retention_token_usage_acknowledged) to do it",
                table="token_usage",
            )
        out.append(PruneTarget("token_usage", policy.token_usage_days))
    return out


def unshipped(conn: Db, target: PruneTarget, now: datetime, shipped_through: int) -> int:
    """How many rows pruning ``target`` would delete that stand for log rows not shipped yet. Read-only.

    ``events`` rows carry their log row's id (``raw_event_id``); ``token_usage`` rows carry none,
    so while any log row is unshipped every ``token_usage`` candidate counts.
    """
    cutoff = cutoff_for(now, target.older_than_days)
    tcol, icol = check_table(target.table)
    with storage_errors():
        if target.table == "events":
            return int(
                scalar(conn, f"SELECT count(*) FROM events WHERE {tcol} < ? AND {icol} > ?", (cutoff, shipped_through))
                or 0
            )
        if scalar(conn, "SELECT 1 FROM events_raw WHERE id > ? LIMIT 1", (shipped_through,)) is None:
            return 0
        return int(scalar(conn, f"SELECT count(*) FROM {target.table} WHERE {tcol} < ?", (cutoff,)) or 0)


def prune(
    conn: Db,
    policy: Policy,
    *,
    now: datetime,
    dry_run: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    keep_keys: bool = True,
    on_batch: Callable[[int], None] | None = None,
    shipped_through: int | None = None,
) -> list[PruneResult]:
    """Apply ``policy`` to the database tables (backups: see ``backup.apply_retention``).

    Args:
        shipped_through: with team-mode shipping configured (SPEC §13), the local log id through
            which rows are in the central store (``ingestd.store.identity.shipped_through``); prune then
            refuses to delete any row that stands for a log row past it. None: not shipping.

    Returns:
        One ``PruneResult`` per target, in ``targets(policy)`` order.

    Raises:
        ConfigError: see ``targets``, or rows not shipped yet would go; nothing is deleted then.
    """
    if shipped_through is not None and not dry_run:
        for t in targets(policy):
            n = unshipped(conn, t, now, shipped_through)
            if n:
                raise ConfigError(
                    f"refusing to prune {t.table}: {n} of the rows it would delete stand for log rows not shipped "
                    f"to the central store yet (shipped through local log id {shipped_through}); run `ingestd ship` "
                    "first (or wait for the daemon to ship)",
                    table=t.table,
                    unshipped=n,
                )
    return [
        prune_table(
            conn,
            t.table,
            now=now,
            older_than_days=t.older_than_days,
            dry_run=dry_run,
            batch_rows=batch_rows,
            keep_keys=keep_keys,
            on_batch=on_batch,
        )
        for t in targets(policy)
    ]
