"""What prune removed stays removed on the live write path too (SPEC §8).

``replay`` and the re-projection of ``migrate`` rebuild the projections from the log and then
apply the prune receipts (``ingestd.store.pruned.apply_receipts``). A writer that re-reads
pruned history (a resumed session's copy of it, a synced copy of a file, a file reset) folds the
same log evidence again; without the receipts, the rows prune deleted came back and the live
database no longer equalled its rebuild. ``enforce`` applies the same receipts inside each write
transaction (``ingestd.store.writer.apply_batch``) to the sessions it wrote, so no row a receipt
covers that the transaction brought back survives a commit; the rows prune has yet to delete are
left to prune.
``covered`` counts such rows for ``ingestd verify``.

One limitation is known and documented (docs/reference.md "Retention"): a message claimed by two sessions
whose times fall on both sides of a cutoff. Replay keeps the row when the later claim wins and
drops it when the pruned one wins; live, the pruned claim is gone, so the later claim's row comes
back either way. Claims of one message normally share their time (a copy of the same line).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ingestd.store.connection import Db, storage_errors


@dataclass(frozen=True, slots=True)
class Receipt:
    """A ``prune_receipts`` row: what a replay must not bring back.

    Attributes:
        target: str, table or ``backups``.
        cutoff: str, canonical UTC.
        rows: int.
        watermark: int | None, ``max(events_raw.id)`` when the prune started.
    """

    target: str
    cutoff: str
    rows: int
    watermark: int | None


def receipts(conn: Db) -> list[Receipt]:
    """Every real (not dry-run) receipt, oldest first. Read-only."""
    with storage_errors():
        return [
            Receipt(str(r[0]), str(r[1]), int(r[2]), None if r[3] is None else int(r[3]))
            for r in conn.execute(
                "SELECT target, cutoff, rows, max_raw_event_id FROM prune_receipts WHERE dry_run = 0 ORDER BY id"
            )
        ]


def apply_receipts(conn: Db, recs: list[Receipt], sessions: Sequence[str] | None = None) -> int:
    """Delete from a *rebuilt* database what the receipts say prune removed. Call inside a write txn.

    ``events``: rows with ``occurred_at < cutoff`` and ``raw_event_id <= watermark`` (later log rows
    were never pruned). ``token_usage``: rows with ``occurred_at < cutoff`` (usage rows carry no log id).
    ``sessions``: only the rows of these sessions (the live path, ``store.pruned.enforce``); None: all.

    Returns:
        Rows removed.
    """
    only, args = (
        ("", ()) if sessions is None else (f" AND session_id IN ({', '.join('?' * len(sessions))})", tuple(sessions))
    )
    removed = 0
    for r in recs:
        if r.target == "events":
            conn.execute(
                f"DELETE FROM events WHERE occurred_at < ? AND raw_event_id <= ?{only}",
                (r.cutoff, r.watermark if r.watermark is not None else -1, *args),
            )
        elif r.target == "token_usage":
            conn.execute(f"DELETE FROM token_usage WHERE occurred_at < ?{only}", (r.cutoff, *args))
        else:
            continue
        removed += conn.changes()
    return removed


def covering(recs: list[Receipt]) -> list[Receipt]:
    """The receipts that cover what all of ``recs`` cover, without the redundant ones. Pure.

    ``token_usage``: only the latest cutoff matters (a row older than an earlier cutoff is older
    than the latest); the first of equal latest cutoffs is kept. ``events``: a receipt whose
    cutoff and watermark (None as -1) are both within another's is dropped (of equal pairs the
    last is kept), the rest in ascending (cutoff, watermark). Other targets (``backups``) remove
    no rows and are dropped. O(n log n): sorted by cutoff then watermark, both descending, a
    receipt is kept when its watermark exceeds every one before it.
    """
    usage = [r for r in recs if r.target == "token_usage"]
    out = [max(usage, key=lambda r: r.cutoff)] if usage else []
    marks = {(r.cutoff, r.watermark if r.watermark is not None else -1): r for r in recs if r.target == "events"}
    kept: list[Receipt] = []
    highest: int | None = None
    for (_, mark), r in sorted(marks.items(), reverse=True):
        if highest is None or mark > highest:
            kept.append(r)
            highest = mark
    return out + kept[::-1]


_RECEIPTS = "SELECT target, cutoff, max_raw_event_id FROM prune_receipts WHERE dry_run = 0 ORDER BY id"
_NEWEST = "SELECT max(id) FROM prune_receipts"


class _Covering:
    """What a connection keeps of the prune receipts (``Db.state``): the newest receipt id it read
    and the covering set of the receipts up to it. Receipts are only ever added (prune never
    deletes one; ids are the rowid), so an unchanged ``max(id)`` is an unchanged set."""

    __slots__ = ("newest", "recs")

    def __init__(self) -> None:
        self.newest: int | None = None
        self.recs: list[Receipt] = []


def _covering_now(conn: Db) -> list[Receipt]:
    """The covering set of the database's receipts: one indexed read of ``max(id)`` when no receipt
    was added since this connection last read them, else the receipts are read again."""
    newest = conn.execute(_NEWEST).fetchall()[0][0]
    if newest is None:
        return []
    known = conn.state(_Covering)
    if known.newest == newest:
        return known.recs
    # read bare, not through ``receipts`` (its error wrapper costs more than the read); the
    # caller's transaction translates a refusal
    rows = conn.execute(_RECEIPTS).fetchall()
    recs = covering([Receipt(str(t), str(c), 0, None if w is None else int(w)) for t, c, w in rows])
    known.newest, known.recs = int(newest), recs
    return recs


def enforce(conn: Db, sessions: Collection[str]) -> int:
    """Delete the rows of ``sessions`` the prune receipts cover; call inside the writer's transaction.

    Only the sessions the transaction wrote can hold a row it brought back (every projection row
    names the session it was folded for), so the deletes are limited to them: a transaction
    between two batches of a running prune leaves the rest to prune, which deletes it in its own
    short transactions and counts it (its result and its receipt's ``rows``). One read of
    ``max(prune_receipts.id)`` (the covering set is kept per connection and recomputed only when
    a receipt was added; none: nothing else happens), then one delete per covering receipt on
    the session indexes. The rollup follows through its delete trigger.

    Args:
        sessions: session ids the transaction folded rows for (none: nothing is read).

    Returns:
        int, rows removed.
    """
    if not sessions:
        return 0
    recs = _covering_now(conn)
    return apply_receipts(conn, recs, sorted(sessions)) if recs else 0


def covered(conn: Db, limit: int) -> list[str]:
    """Up to ``limit`` lines naming projection rows a prune receipt covers (there should be none). Read-only."""
    found: list[str] = []
    for r in covering(receipts(conn)):
        if r.target == "token_usage":
            sql = "SELECT id, occurred_at FROM token_usage WHERE occurred_at < ? ORDER BY occurred_at, id LIMIT ?"
            params: tuple[object, ...] = (r.cutoff, limit)
        else:
            sql = (
                "SELECT raw_event_id, occurred_at FROM events WHERE occurred_at < ? AND raw_event_id <= ?"
                " ORDER BY occurred_at, raw_event_id LIMIT ?"
            )
            params = (r.cutoff, r.watermark if r.watermark is not None else -1, limit)
        found += [
            f"{r.target} row {rid} at {at} is older than the prune cutoff {r.cutoff}: pruned history came back"
            for rid, at in conn.execute(sql, params)
        ]
    return found[:limit]
