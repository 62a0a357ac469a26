"""``sqlgen.in_parts``: an ``IN (...)`` list bound in parts, and ``logrows.rows_by_id`` over more ids
than one part holds."""

from __future__ import annotations

from pathlib import Path

from ingestd.core.records import NewLogRow
from ingestd.store.connection import connect
from ingestd.store.logrows import rows_by_id
from ingestd.store.migrate import migrate
from ingestd.store.sqlgen import IN_PART, in_parts
from ingestd.store.writer import apply_batch


def test_values_come_in_parts_each_with_its_marks() -> None:
    parts = list(in_parts(list(range(2 * IN_PART + 1))))
    assert [len(p) for _, p in parts] == [IN_PART, IN_PART, 1]
    assert [m.count("?") for m, _ in parts] == [IN_PART, IN_PART, 1]
    assert parts[2] == ("?", (2 * IN_PART,))
    assert [x for _, p in parts for x in p] == list(range(2 * IN_PART + 1))
    assert list(in_parts([])) == []


def test_rows_by_id_reads_every_part(tmp_path: Path) -> None:
    conn = connect(tmp_path / "x.db")
    migrate(conn)
    n = IN_PART + 7
    rows = [NewLogRow(f"k{i}", "hook", "Stop", b"{}", "2026-01-01T00:00:00.000Z", "s", "hook") for i in range(n)]
    ids = sorted(apply_batch(conn, rows).log_ids.values())
    got = rows_by_id(conn, [*ids, 10**9])  # an id that is not there is left out
    assert sorted(got) == ids
