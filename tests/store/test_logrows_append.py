"""``logrows.append``: the ids of the rows it inserted, existing keys skipped, with one read of the log's maximum id."""

from __future__ import annotations

import apsw

from ingestd.core.records import NewLogRow
from ingestd.store import logrows
from ingestd.store.connection import write_txn


def _row(n: int) -> NewLogRow:
    return NewLogRow(f"k{n}", "hook", "Stop", b'{"n": %d}' % n, "2026-01-01T00:00:00.000Z", "s", "hook")


def _append(db: apsw.Connection, rows: list[NewLogRow]) -> tuple[dict[str, int], int, int]:
    """``append`` in a transaction: its ids, rows inserted, and how often it read the log's ``max(id)``."""
    reads = [0]
    real = logrows._max_log_id

    def counting(conn: apsw.Connection) -> int:
        reads[0] += 1
        return real(conn)

    logrows._max_log_id = counting  # type: ignore[assignment]
    try:
        ids, n = write_txn(db, lambda c: logrows.append(c, rows))
    finally:
        logrows._max_log_id = real  # type: ignore[assignment]
    return ids, n, reads[0]


def test_new_rows_take_the_next_ids_in_order_with_one_read_of_the_maximum(db: apsw.Connection) -> None:
    assert _append(db, [_row(0), _row(1), _row(2)]) == ({"k0": 1, "k1": 2, "k2": 3}, 3, 1)
    assert _append(db, [_row(3), _row(4)]) == ({"k3": 4, "k4": 5}, 2, 1)


def test_existing_keys_are_skipped_and_the_others_read_back(db: apsw.Connection) -> None:
    _append(db, [_row(0), _row(1)])
    ids, n, _ = _append(db, [_row(1), _row(5), _row(0), _row(6)])
    assert (ids, n) == ({"k5": 3, "k6": 4}, 2)
    assert _append(db, [_row(5), _row(6)])[:2] == ({}, 0)
    assert [tuple(r) for r in db.execute("SELECT id, idempotency_key FROM events_raw ORDER BY id")] == [
        (1, "k0"),
        (2, "k1"),
        (3, "k5"),
        (4, "k6"),
    ]
