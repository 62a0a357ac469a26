"""Checkpoint trust (SPEC §7): "A checkpoint is trusted only while the session it stands for still exists"."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ingestd.ingest.backfill import ingest_roots
from tests.ingest.support import count, dump, new_db

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "projects"
NOW = "2026-03-01T00:00:00.000Z"
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
# children before parents (agents.session_id and parent_agent_id are foreign keys)
PROJECTIONS = ("events", "compactions", "tool_calls", "token_usage", "orchestration_edges", "agents", "sessions")


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    shutil.copytree(FIXTURES, root)
    return root


def _drop_session(conn: Any, sid: str) -> None:
    with conn:
        conn.execute("UPDATE agents SET parent_agent_id = NULL WHERE session_id = ?", (sid,))
        for t in PROJECTIONS:
            conn.execute(f"DELETE FROM {t} WHERE {'id' if t == 'sessions' else 'session_id'} = ?", (sid,))


def test_missing_session_is_reprojected_from_the_log(tmp_path: Path) -> None:
    root = _root(tmp_path)
    conn = new_db(tmp_path / "x.db")
    ingest_roots(conn, [root], now=NOW)
    before = dump(conn)
    _drop_session(conn, S1)
    assert count(conn, "SELECT count(*) FROM sessions WHERE id = ?", (S1,)) == 0
    s = ingest_roots(conn, [root], now="2026-03-02T00:00:00.000Z")
    assert s.rows_inserted == 0  # the log already had every line: nothing duplicated
    assert s.files_read == 5  # S1: its main file, 3 subagent files and 1 sidecar; nothing else
    assert dump(conn) == before
    # trusted again: the next run parses nothing
    assert ingest_roots(conn, [root], now="2026-03-03T00:00:00.000Z").files_read == 0


def test_checkpoints_without_their_log_are_not_trusted(tmp_path: Path) -> None:
    """A database holding checkpoints but not the rows they stand for (e.g. a different file)."""
    root = _root(tmp_path)
    a = new_db(tmp_path / "a.db")
    ingest_roots(a, [root], now=NOW)
    b = new_db(tmp_path / "b.db")
    cols = "root, origin, session_id, origin_gen, committed_offset, size, mtime_ns, inode, head_hash"
    cols += ", ingest_revision, updated_at"
    rows = a.execute(f"SELECT {cols} FROM ingest_checkpoints").fetchall()
    with b:
        b.executemany(f"INSERT INTO ingest_checkpoints ({cols}) VALUES ({','.join('?' * 11)})", rows)
    s = ingest_roots(b, [root], now=NOW)
    assert s.files_unchanged == 0
    assert dump(b) == dump(a)
    assert count(b, "SELECT count(*) FROM events_raw") == count(a, "SELECT count(*) FROM events_raw")


def test_flat_agent_file_checkpoint_needs_its_log_rows(tmp_path: Path) -> None:
    """``-home-u-old/agent-b3333333.jsonl`` (2.0.x flat layout) has no session in its path."""
    root = _root(tmp_path)
    a = new_db(tmp_path / "a.db")
    ingest_roots(a, [root], now=NOW)
    cp = a.execute("SELECT session_id FROM ingest_checkpoints WHERE origin = '-home-u-old/agent-b3333333.jsonl'")
    assert cp.fetchall() == [(None,)]
    s = ingest_roots(a, [root], now=NOW)
    assert s.files_read == 0
