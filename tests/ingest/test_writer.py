"""apply_batch: one transaction, idempotent keys, hooks through the same path."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ingestd.core.records import NewLogRow
from ingestd.errors import StorageError
from ingestd.store.writer import FoldCache, apply_batch
from tests.ingest.support import count, dump, new_db

SID = "66666666-6666-4666-8666-666666666666"


def hook(key: str, name: str, ts: str, **body: object) -> NewLogRow:
    payload = orjson.dumps({"session_id": SID, "hook_event_name": name, **body})
    return NewLogRow(key, "hook", name, payload, ts, SID, "hook")


def line(offset: int, obj: dict[str, object], ts: str) -> NewLogRow:
    data = orjson.dumps(obj)
    return NewLogRow(
        f"j:x:0:{offset:012x}", "jsonl", str(obj["type"]), data, ts, SID, f"p/{SID}.jsonl", 0, offset, obj=obj
    )


def test_hook_rows_create_session_agent_events_and_reapply_is_noop(tmp_path: Path) -> None:
    conn = new_db(tmp_path / "x.db")
    rows = [
        hook("h1", "UserPromptSubmit", "2026-01-01T00:00:00.000Z", prompt="hi"),
        hook("h2", "PreToolUse", "2026-01-01T00:00:01.000Z", tool_name="Bash", tool_use_id="t1"),
    ]
    res = apply_batch(conn, rows)
    assert res.inserted == 2 and res.sessions == {SID}
    assert count(conn, "SELECT count(*) FROM events") == 2
    assert conn.execute("SELECT status FROM tool_calls").fetchall() == [("running",)]
    before = dump(conn)
    assert apply_batch(conn, rows).inserted == 0
    assert dump(conn) == before


def test_cache_miss_rebuilds_from_log(tmp_path: Path) -> None:
    conn = new_db(tmp_path / "x.db")
    usage = {"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}

    def part(i: int, out: int) -> NewLogRow:
        u = dict(usage, output_tokens=out)
        obj: dict[str, object] = {
            "type": "assistant",
            "sessionId": SID,
            "uuid": f"u{i}",
            "timestamp": f"2026-01-01T00:00:0{i}.000Z",
            "message": {"id": "msg_1", "model": "m", "content": [], "usage": u},
        }
        return line(i * 100, obj, "2026-01-01T00:01:00.000Z")

    apply_batch(conn, [part(1, 500)], cache=FoldCache())
    apply_batch(conn, [part(2, 3)], cache=FoldCache())  # fresh cache: state rebuilt from the log
    assert conn.execute("SELECT output FROM token_usage").fetchall() == [(500,)]


def test_failed_batch_leaves_nothing(tmp_path: Path) -> None:
    """A batch the database refuses (a row no CHECK admits) leaves neither its log rows nor their projections."""
    conn = new_db(tmp_path / "x.db")
    bad = NewLogRow("k", "nonsense-source", "x", b"{}", "2026-01-01T00:00:00.000Z", SID, "hook")
    with pytest.raises(StorageError):
        apply_batch(conn, [hook("h1", "Stop", "2026-01-01T00:00:00.000Z"), bad])
    assert count(conn, "SELECT count(*) FROM events_raw") == 0
    assert count(conn, "SELECT count(*) FROM sessions") == 0


def test_log_as_of_never_moves_back(tmp_path: Path) -> None:
    conn = new_db(tmp_path / "x.db")
    apply_batch(conn, [hook("h1", "UserPromptSubmit", "2026-01-01T00:20:00.000Z", prompt="hi")])
    # a batch read later that carries an older receipt time (a slow writer) keeps the newer as_of,
    # so its watchdog pass does not judge idleness from the past
    apply_batch(conn, [hook("h2", "Notification", "2026-01-01T00:00:00.000Z")])
    got = conn.execute("SELECT value FROM meta WHERE key = 'log_as_of'").fetchall()
    assert got == [("2026-01-01T00:20:00.000Z",)]
