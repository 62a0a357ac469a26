"""The dump/compare machinery and ``replay()`` on hand-made databases (a stand-in rebuilder)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import apsw
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.projection.dump import TABLES, columns, compare, first_differences
from ingestd.projection.replay import replay
from ingestd.retention import prune as pr
from ingestd.store.connection import connect

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


def log_rebuilder(src: apsw.Connection, dst: apsw.Connection, /, *, batch_size: int, origin_order: str) -> object:
    """Stand-in for rebuild_projections on the seeded shape: events from the hook log rows, the rest copied.

    Copying the other projections keeps this about the replay machinery, not the projector;
    ``events`` is really re-derived from the log, so pruned rows would come back without receipts.
    """
    order = "DESC" if origin_order == "reverse" else "ASC"
    dst.execute("BEGIN")
    for t in ("sessions", "agents", "orchestration_edges", "token_usage", "tool_calls", "compactions"):
        cols = [r[1] for r in src.execute(f"PRAGMA table_info({t})")]
        rows = src.execute(f"SELECT * FROM {t}").fetchall()
        dst.executemany(f"INSERT INTO {t} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)
    hooks = src.execute(
        f"SELECT id, session_id, session_id, event_type, received_at FROM events_raw WHERE source = 'hook' "
        f"ORDER BY id {order}"
    ).fetchall()
    for i in range(0, len(hooks), batch_size):
        dst.executemany(
            "INSERT INTO events (raw_event_id, session_id, agent_id, event_type, occurred_at) VALUES (?, ?, ?, ?, ?)",
            hooks[i : i + batch_size],
        )
    dst.execute("COMMIT")
    return len(hooks)


def test_equal_databases_compare_equal(db_path: Path) -> None:
    res = replay(db_path, rebuilder=log_rebuilder)
    assert res.comparison.ok, res.comparison.differences
    doc = res.to_json()
    assert [t["table"] for t in doc["tables"]] == [t for t, _ in TABLES]
    rows = {t["table"]: t["rows"] for t in doc["tables"]}
    assert rows["token_usage"] == {"live": 10, "replay_a": 10, "replay_b": 10}
    assert rows["events"]["live"] == 10
    assert res.log_rows == 20
    assert not list(db_path.parent.glob(".ingestd-replay-*"))  # scratch removed


def test_corrupted_live_row_is_named(db_path: Path) -> None:
    conn = connect(db_path)
    rid = conn.execute("SELECT max(raw_event_id) FROM events").fetchall()[0][0]
    conn.execute("UPDATE events SET event_type = 'Corrupt' WHERE raw_event_id = ?", (rid,))
    conn.close()
    res = replay(db_path, rebuilder=log_rebuilder)
    assert not res.comparison.ok
    assert set(res.comparison.differences) == {"events: live vs replay_a", "events: live vs replay_b"}
    [d] = res.comparison.differences["events: live vs replay_a"]
    assert d.key == {"raw_event_id": rid}
    assert d.left is not None and d.left["event_type"] == "Corrupt"
    assert d.right is not None and d.right["event_type"] == "Stop"


def test_missing_extra_and_type_differences(tmp_path: Path) -> None:
    a, b = connect(tmp_path / "a.db"), connect(tmp_path / "b.db")
    for c in (a, b):
        c.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v)")
    a.executemany("INSERT INTO t VALUES (?, ?)", [(1, "x"), (2, 1), (4, "z")])
    b.executemany("INSERT INTO t VALUES (?, ?)", [(1, "x"), (2, "1"), (3, "y")])
    comp = compare([("a", a), ("b", b)], [("t", ("k",))])
    diffs = comp.differences["t: a vs b"]
    assert [(d.key["k"], d.left is not None, d.right is not None) for d in diffs] == [
        (2, True, True),
        (3, False, True),
        (4, True, False),
    ]
    assert comp.to_json()["tables"][0]["equal"] is False
    assert first_differences(a, b, "t", ("k",), limit=1)[0].key == {"k": 2}


def test_text_keys_merge_in_sqlite_order(tmp_path: Path) -> None:
    a, b = connect(tmp_path / "a.db"), connect(tmp_path / "b.db")
    for c in (a, b):
        c.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v) WITHOUT ROWID")
    keys = ["B", "a", "é", "Z", "ß", "\U0001f600"]
    a.executemany("INSERT INTO t VALUES (?, 0)", [(k,) for k in keys])
    b.executemany("INSERT INTO t VALUES (?, 0)", [(k,) for k in keys if k != "é"])
    [d] = first_differences(a, b, "t", ("k",))
    assert d.key == {"k": "é"} and d.right is None


def test_replay_after_prune_does_not_resurrect(db_path: Path) -> None:
    conn = connect(db_path)
    [res] = pr.prune(conn, pr.Policy(), now=datetime(2026, 4, 3, tzinfo=UTC))
    assert res.rows == 4
    out = replay(db_path, rebuilder=log_rebuilder)
    assert out.comparison.ok, out.comparison.differences
    assert out.receipts == 1
    assert {d.rows for d in out.comparison.dumps["events"]} == {6}


def test_without_receipt_pruned_rows_would_come_back(db_path: Path) -> None:
    conn = connect(db_path)
    pr.prune(conn, pr.Policy(), now=datetime(2026, 4, 3, tzinfo=UTC))
    conn.execute("DELETE FROM prune_receipts")
    out = replay(db_path, rebuilder=log_rebuilder)
    assert "events: live vs replay_a" in out.comparison.differences


def test_every_key_column_is_a_compared_column(db_path: Path) -> None:
    """The merge walk finds a differing row by its key: a key column the table (or view) lacks would
    be ordered by as a string literal and break the walk on the first difference."""
    conn = connect(db_path)
    for table, pk in TABLES:
        assert set(pk) <= set(columns(conn, table)), (table, pk, columns(conn, table))


def test_a_missing_search_document_is_named(tmp_path: Path) -> None:
    a = tmp_path / "a.db"
    res = CliRunner().invoke(cli, ["ingest", "--db", str(a), "--projects", str(FIXTURES)])
    assert res.exit_code == 0, res.output
    b = tmp_path / "b.db"
    shutil.copyfile(a, b)
    conn = connect(b)
    gone = conn.execute("SELECT doc_id, uuid FROM search_docs ORDER BY doc_id LIMIT 1").fetchall()[0]
    conn.execute("DELETE FROM search_doc_rows WHERE doc_id = ?", (gone[0],))
    conn.close()
    comp = compare([("a", connect(a, readonly=True)), ("b", connect(b, readonly=True))])
    [d] = comp.differences["search_docs: a vs b"]
    assert d.right is None and d.left is not None and d.left["uuid"] == gone[1]
