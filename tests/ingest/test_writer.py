"""apply_batch: one transaction, idempotent keys, hooks through the same path."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ingestd.core.records import NewLogRow
from ingestd.errors import StorageError
from ingestd.projection.rebuild import rebuild_projections
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


# A Read call of a real 2.1.62 session (corpus: -Users-user-Documents-cka-buddy/7da73774-....jsonl),
# its tool result's content cut short.
CALL_SID = "7da73774-862d-4897-94a7-ef847ce65033"
_CALL_COMMON = {
    "isSidechain": False,
    "userType": "external",
    "cwd": "/Users/user/Documents/cka-buddy",
    "sessionId": CALL_SID,
    "version": "2.1.62",
    "gitBranch": "master",
    "slug": "async-jumping-candy",
}
READ_CALL = {
    "parentUuid": "89492198-dfc9-4a19-a498-868bae32fa31",
    **_CALL_COMMON,
    "message": {
        "model": "claude-opus-4-6",
        "id": "msg_01TggsqWqSJw6EhJJb2dmGWw",
        "type": "message",
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_01PJR6Tt86kr6Qu382RBbgSM",
                "name": "Read",
                "input": {
                    "file_path": "/Users/user/Documents/cka-buddy/specs/interactive-learning-ux-rebels-upgrade.md"
                },
                "caller": {"type": "direct"},
            }
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 1,
            "cache_creation_input_tokens": 3367,
            "cache_read_input_tokens": 86655,
            "output_tokens": 100,
            "service_tier": "standard",
            "cache_creation": {"ephemeral_1h_input_tokens": 3367, "ephemeral_5m_input_tokens": 0},
        },
    },
    "requestId": "req_011CYZnnbLgL6C11ymbBKx3W",
    "type": "assistant",
    "uuid": "6c03e606-84b1-4673-9523-6abb08841021",
    "timestamp": "2026-02-28T03:53:41.799Z",
}
READ_PROGRESS = {
    "parentUuid": "6c03e606-84b1-4673-9523-6abb08841021",
    **_CALL_COMMON,
    "type": "progress",
    "data": {
        "type": "hook_progress",
        "hookEvent": "PreToolUse",
        "hookName": "PreToolUse:Read",
        "command": "uv run ~/.claude/hooks/pre_tool_use.py",
    },
    "toolUseID": "toolu_01PJR6Tt86kr6Qu382RBbgSM",
    "parentToolUseID": "toolu_01PJR6Tt86kr6Qu382RBbgSM",
    "uuid": "9b1d2efb-1403-4656-9052-685e8de846f8",
    "timestamp": "2026-02-28T03:53:41.800Z",
}
READ_RESULT = {
    "parentUuid": "8ba0a187-3544-4d20-bd3e-e56e967fdc5f",
    **_CALL_COMMON,
    "type": "user",
    "message": {
        "role": "user",
        "content": [
            {
                "tool_use_id": "toolu_01PJR6Tt86kr6Qu382RBbgSM",
                "type": "tool_result",
                "content": "     1\u2192# Plan: Interactive Learning UX \u2014 Rebels Pattern Upgrade\n",
            }
        ],
    },
    "uuid": "c512a0f1-e0df-45a2-a970-e20792eb2ace",
    "timestamp": "2026-02-28T03:53:41.852Z",
    "sourceToolAssistantUUID": "6c03e606-84b1-4673-9523-6abb08841021",
}


def call_line(offset: int, obj: dict[str, object]) -> NewLogRow:
    data = orjson.dumps(obj)
    origin = f"p/{CALL_SID}.jsonl"
    at = "2026-02-28T03:54:00.000Z"
    return NewLogRow(f"j:x:0:{offset:012x}", "jsonl", str(obj["type"]), data, at, CALL_SID, origin, 0, offset, obj=obj)


def test_a_writer_sees_rows_another_appended_after_a_batch_of_other_sessions(tmp_path: Path) -> None:
    """Two writers on one database (the daemon and an ``ingest``), each with its fold cache: the
    daemon's batch of another session learns that the ingest committed, and its next batch of the
    first session folds the ingest's rows of it before its own, as a rebuild of the log does."""
    path = tmp_path / "x.db"
    daemon, ingest = new_db(path), new_db(path)
    daemon_cache = FoldCache()
    apply_batch(daemon, [call_line(600, READ_PROGRESS)], cache=daemon_cache)
    apply_batch(ingest, [call_line(0, READ_CALL)], cache=FoldCache())
    apply_batch(daemon, [hook("h1", "UserPromptSubmit", "2026-02-28T03:54:00.000Z", prompt="hi")], cache=daemon_cache)
    apply_batch(daemon, [call_line(2400, READ_RESULT)], cache=daemon_cache)
    assert daemon.execute("SELECT tool_name, started_at, status FROM tool_calls").fetchall() == [
        ("Read", "2026-02-28T03:53:41.799Z", "completed")
    ]
    rebuilt = new_db(tmp_path / "rebuilt.db")
    rebuild_projections(daemon, rebuilt)
    assert dump(daemon) == dump(rebuilt)


def test_two_bodies_under_one_key_in_a_batch_project_the_one_logged(tmp_path: Path) -> None:
    """Two deliveries with one client ``Idempotency-Key`` and different bodies, committed in one
    batch: the first is logged, the second refused (409), and only the first is projected."""
    conn = new_db(tmp_path / "x.db")
    at = "2026-01-01T00:00:01.000Z"
    first = hook("h:k:same", "PreToolUse", at, tool_name="Bash", tool_use_id="t1", tool_input={"command": "ls"})
    second = hook("h:k:same", "PreToolUse", at, tool_name="Write", tool_use_id="t1", tool_input={"file_path": "/x"})
    res = apply_batch(conn, [first, second])
    assert res.inserted == 1
    assert conn.execute("SELECT payload_bytes(codec, payload) FROM events_raw").fetchall() == [(first.payload,)]
    assert conn.execute("SELECT tool_name FROM tool_calls").fetchall() == [("Bash",)]
    assert count(conn, "SELECT count(*) FROM events") == 1
    rebuilt = new_db(tmp_path / "rebuilt.db")
    rebuild_projections(conn, rebuilt)
    assert dump(conn) == dump(rebuilt)
