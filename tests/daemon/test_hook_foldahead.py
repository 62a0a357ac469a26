"""The next group folded during the COMMIT before it (``writerloop``, ``foldahead``) is exact: the
same projections as every delivery committed alone; and a fold made ahead is written only when it
still holds (nobody else committed in between, the ids as predicted)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ingestd.core.records import NewLogRow
from ingestd.daemon import apply as apply_mod
from ingestd.daemon import writerchild as child
from ingestd.daemon import writerloop
from ingestd.store.connection import connect, set_meta
from ingestd.store.migrate import migrate
from tests.daemon.test_hook_group_exact import _interleaved, _projections, _run


def _serve_all(db: Path, rows: list[NewLogRow], max_group_rows: int) -> tuple[apply_mod.HookStore, int]:
    """Every row sent at once (one item each, then STOP) to ``writerloop.serve`` with a ``HookStore``:
    each group after the first is gathered and folded during the COMMIT before it. The store and
    the number of transactions."""
    conn = connect(db)
    migrate(conn)
    store = apply_mod.make_store()
    parent, mine = socket.socketpair()
    items = [(child.ROWS, n, [child.wire_row(r)]) for n, r in enumerate(rows)]
    parent.sendall(child.frame(items) + child.frame([(child.STOP,)]))
    writerloop.serve(mine, conn, store, max_group_rows)
    conn.close()
    mine.close()
    parent.settimeout(5)
    reader, replies, data = child.FrameReader(), [], b"x"
    while data and sum(len(r[0]) for r in replies) < len(rows):
        data = parent.recv(1 << 20)
        replies += reader.feed(data)
    parent.close()
    assert all(ok for results, _ in replies for _, ok, _ in results)
    assert sorted(i for results, _ in replies for i, _, _ in results) == list(range(len(rows)))
    return store, sum(len(groups) for _, groups in replies)


def test_groups_folded_during_the_commit_before_equal_one_by_one(tmp_path: Path) -> None:
    rows = _interleaved()
    alone = _run(tmp_path / "alone.db", [[r] for r in rows])
    store, commits = _serve_all(tmp_path / "ahead.db", rows, 5)
    assert commits == 8  # 36 rows, 5 a group
    # every group but the first was folded while the one before committed, and written as folded
    assert store.folded_ahead == 7 and store.ahead_used == 7
    ahead = _projections(tmp_path / "ahead.db")
    for table in alone:
        assert ahead[table] == alone[table], table


def _two_groups(
    db: Path, first: list[NewLogRow], second: list[NewLogRow], between: Callable[[], Any]
) -> apply_mod.HookStore:
    """``first`` committed with ``second`` folded (in two chunks) during its COMMIT; ``between()``;
    then ``second`` committed with that fold as its prefold."""
    conn = connect(db)
    migrate(conn)
    store = apply_mod.make_store()
    store(conn, first[:1])  # the identity and the sessions' states are known
    made: list[Any] = []

    def commit_with(do_commit: Callable[[], object]) -> None:
        ahead = store.ahead()
        assert ahead is not None
        assert ahead.add(second[:5]) and ahead.add(second[5:])  # as they arrive, in two chunks
        made.append(store.made(ahead))
        do_commit()

    store(conn, first[1:], commit_with=commit_with)
    assert made[0] is not None
    between()
    store(conn, second, prefold=made[0])
    conn.close()
    return store


def test_a_fold_made_ahead_is_refused_when_another_writer_committed_meanwhile(tmp_path: Path) -> None:
    rows = _interleaved()
    db = tmp_path / "other.db"
    store = _two_groups(db, rows[:12], rows[12:24], lambda: set_meta(connect(db), "someone", "else"))
    assert store.folded_ahead == 1 and store.ahead_used == 0  # the data_version moved
    same = _two_groups(tmp_path / "same.db", rows[:12], rows[12:24], lambda: None)
    assert same.folded_ahead == 1 and same.ahead_used == 1
    alone = _run(tmp_path / "alone.db", [[r] for r in rows[:24]])
    for got in (_projections(db), _projections(tmp_path / "same.db")):
        for table in alone:
            if table != "meta":
                assert got[table] == alone[table], table


def test_a_fold_made_ahead_is_refused_when_a_row_was_already_logged(tmp_path: Path) -> None:
    rows = _interleaved()
    db = tmp_path / "dup.db"
    # the second group repeats a row of the first: it is skipped, the ids move, the fold is refused
    store = _two_groups(db, rows[:12], [rows[11], *rows[12:24]], lambda: None)
    assert store.folded_ahead == 1 and store.ahead_used == 0
    alone = _run(tmp_path / "alone.db", [[r] for r in rows[:24]])
    got = _projections(db)
    for table in alone:
        assert got[table] == alone[table], table
