"""The central projector refolds like the local one (``SessionState.needs_refold``, DESIGN.md
"Inferred occurred_at"): the refold loop lives in ``projector.fold``, so no caller can skip it."""

from __future__ import annotations

from pathlib import Path

import orjson
import psycopg

from tests.central.support import NOW, local_db, project, ship_all

SID = "5e55a1d0-0000-4000-8000-000000000001"
T1 = "2026-05-01T10:00:00.000Z"


def _line(obj: dict[str, object]) -> bytes:
    return orjson.dumps({"sessionId": SID, "cwd": "/w", **obj}) + b"\n"


def test_an_inferred_time_needing_a_refold_is_the_same_centrally(tmp_path: Path, pg_url: str) -> None:
    """The file's first record is folded before the fold knows the file needs its timestamp index;
    the second record's refused timestamp then asks for a refold, which finds the first record's
    time: the message's occurred_at is T1, not the read time (NOW), on both sides."""
    folder = tmp_path / "projects" / "-w"
    folder.mkdir(parents=True)
    usage = {"input_tokens": 3, "output_tokens": 5}
    (folder / f"{SID}.jsonl").write_bytes(
        _line({"type": "user", "uuid": "u1", "timestamp": T1, "message": {"role": "user", "content": "hi"}})
        + _line(
            {
                "type": "assistant",
                "uuid": "u2",
                "timestamp": "not a time",
                "message": {"id": "msg_r", "role": "assistant", "model": "claude-x", "usage": usage, "content": []},
            }
        )
    )
    local = local_db(tmp_path / "a.db", [tmp_path / "projects"], "host-a")
    try:
        q = "SELECT occurred_at FROM token_usage WHERE message_id = 'msg_r'"
        assert {r[0] for r in local.execute(q)} == {T1}
        ship_all(local, pg_url)
    finally:
        local.close()
    project(pg_url)
    with psycopg.connect(pg_url) as c:
        central = {str(r[0]) for r in c.execute(q)}
    assert central == {T1} != {NOW}
