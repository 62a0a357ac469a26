"""``logrows.append``: the ids of the rows it inserted, existing keys skipped, with one read of the log's maximum id;
the interned ids (origins, sessions, kinds) the same in any process, in an ingest and in a rebuild."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import apsw

from ingestd.core.records import NewLogRow
from ingestd.store import logrows
from ingestd.store.connection import write_txn

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


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


def test_the_same_transcripts_intern_to_the_same_ids_in_any_process(tmp_path: Path) -> None:
    # origins, sessions and kinds get their ids in the order the batch names them, never in the
    # order of a set of strings, which changes with the process's hash seed
    tables = {}
    (tmp_path / "none.toml").write_text("")
    for seed in ("1", "2", "3"):
        db = tmp_path / f"{seed}.db"
        env = {**os.environ, "PYTHONHASHSEED": seed, "INGESTD_CONFIG": str(tmp_path / "none.toml")}
        args = ["ingest", "--projects", str(FIXTURES), "--db", str(db), "--json"]
        r = subprocess.run([sys.executable, "-m", "ingestd", *args], env=env, capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        tables[seed] = [
            conn.execute(sql).fetchall()
            for sql in (
                "SELECT * FROM log_origins ORDER BY id",
                "SELECT * FROM log_sessions ORDER BY id",
                "SELECT * FROM log_kinds ORDER BY id",
                "SELECT id, key, line_check, kind, sid, origin_id, origin_offset FROM log_rows ORDER BY id",
            )
        ]
        conn.close()
    assert tables["1"] == tables["2"] == tables["3"]
    assert len(tables["1"][0]) > 3 and len(tables["1"][1]) > 3


def test_a_rebuild_gives_the_sessions_the_same_ids_in_any_process(tmp_path: Path) -> None:
    # a rebuild's fresh database interns the sessions its compact projections name (search
    # documents, tool calls) in the order first named, not in a set's hash-seeded order
    src = tmp_path / "src.db"
    (tmp_path / "none.toml").write_text("")
    env = {**os.environ, "INGESTD_CONFIG": str(tmp_path / "none.toml")}
    args = ["ingest", "--projects", str(FIXTURES), "--db", str(src), "--json"]
    subprocess.run([sys.executable, "-m", "ingestd", *args], env=env, capture_output=True, timeout=120, check=True)
    code = (
        "import sys, apsw\n"
        "from pathlib import Path\n"
        "from ingestd.store.connection import Db\n"
        "from ingestd.projection.replay import _scratch_db, default_rebuilder, live_ctx, rebuild_into\n"
        "src = Db(sys.argv[1], flags=apsw.SQLITE_OPEN_READONLY)\n"
        "dst = _scratch_db(Path(sys.argv[2]))\n"
        "rebuild_into(src, dst, default_rebuilder(live_ctx(src)), batch_size=317, origin_order='reverse')\n"
        "print(dst.execute('SELECT id, session_id FROM log_sessions ORDER BY id').fetchall())\n"
    )
    got = set()
    for seed in ("1", "2", "3"):
        dst = tmp_path / f"rebuilt-{seed}.db"
        r = subprocess.run(
            [sys.executable, "-c", code, str(src), str(dst)],
            env={**env, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        got.add(r.stdout)
    assert len(got) == 1 and got.pop().count("), (") >= 3
