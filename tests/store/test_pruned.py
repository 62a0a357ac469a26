"""``ingestd.store.pruned``: what each write transaction pays for the prune receipts, and the
covering set against its definition."""

from __future__ import annotations

from typing import Any

import apsw
from hypothesis import given
from hypothesis import strategies as st

from ingestd.store import pruned
from ingestd.store.connection import write_txn
from ingestd.store.pruned import Receipt

_INSERT = (
    "INSERT INTO prune_receipts (ran_at, target, cutoff, rows, dry_run, max_raw_event_id) VALUES (?, ?, ?, 0, 0, ?)"
)


def _receipt_reads(conn: apsw.Connection) -> list[str]:
    """Every statement the connection runs that reads the receipts' rows, from now on."""
    seen: list[str] = []

    def trace(_cur: Any, sql: str, _bindings: Any) -> bool:
        if "FROM prune_receipts WHERE dry_run" in sql:
            seen.append(sql)
        return True

    conn.exec_trace = trace
    return seen


def test_the_receipts_are_read_again_only_when_one_was_added(conn: apsw.Connection) -> None:
    for day in range(1, 30):  # a month of daily events receipts
        conn.execute(_INSERT, ("2026-03-01T00:00:00.000Z", "events", f"2026-01-{day:02d}T00:00:00.000Z", day))
    reads = _receipt_reads(conn)
    for _ in range(5):
        write_txn(conn, lambda c: pruned.enforce(c, ["s"]))
    assert len(reads) == 1
    conn.execute(_INSERT, ("2026-03-02T00:00:00.000Z", "token_usage", "2026-01-15T00:00:00.000Z", None))
    for _ in range(3):
        write_txn(conn, lambda c: pruned.enforce(c, ["s"]))
    assert len(reads) == 2


def test_a_new_receipt_applies_from_the_next_transaction(conn: apsw.Connection) -> None:
    assert write_txn(conn, lambda c: pruned.enforce(c, ["s"])) == 0
    for rid, sid in ((1, "s"), (2, "t")):
        conn.execute(
            "INSERT INTO events (raw_event_id, session_id, agent_id, event_type, occurred_at)"
            " VALUES (?, ?, ?, 'x', '2026-01-01T00:00:00.000Z')",
            (rid, sid, sid),
        )
    assert write_txn(conn, lambda c: pruned.enforce(c, ["s"])) == 0
    conn.execute(_INSERT, ("2026-03-02T00:00:00.000Z", "events", "2026-02-01T00:00:00.000Z", 5))
    assert write_txn(conn, lambda c: pruned.enforce(c, ["s"])) == 1
    # only the sessions the transaction wrote: session t's row is prune's to delete
    assert conn.execute("SELECT raw_event_id FROM events").fetchall() == [(2,)]
    assert write_txn(conn, lambda c: pruned.enforce(c, [])) == 0


def _covering_by_definition(recs: list[Receipt]) -> list[Receipt]:
    """The covering set as first written (quadratic): the definition the fast one must equal."""
    usage = [r for r in recs if r.target == "token_usage"]
    out = [max(usage, key=lambda r: r.cutoff)] if usage else []
    marks = {(r.cutoff, r.watermark if r.watermark is not None else -1): r for r in recs if r.target == "events"}
    for k, r in sorted(marks.items()):
        if not any(o != k and o[0] >= k[0] and o[1] >= k[1] for o in marks):
            out.append(r)
    return out


_RECEIPTS = st.builds(
    Receipt,
    st.sampled_from(["events", "events", "token_usage", "backups"]),
    st.sampled_from([f"2026-0{m}-01T00:00:00.000Z" for m in range(1, 7)]),
    st.integers(0, 3),
    st.none() | st.integers(0, 8),
)


@given(st.lists(_RECEIPTS, max_size=30))
def test_covering_equals_its_definition(recs: list[Receipt]) -> None:
    assert pruned.covering(recs) == _covering_by_definition(recs)
