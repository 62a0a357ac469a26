"""What replay does with the generations of a rewritten file (SPEC §3, §7; DESIGN.md "Rewritten files").

Current semantics, pinned here: every generation's lines stay evidence. A ``file_reset`` row opens
a new generation (so the re-read lines get new keys and the log says which lines are current:
those of the origin's highest ``origin_gen``), but the projector folds the lines of every
generation: a billed message that a rewrite dropped is still counted, and lines that reappear
unchanged in the new generation converge on the same rows (natural keys).
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from ingestd.ingest.backfill import ingest_roots
from ingestd.projection.rebuild import rebuild_projections
from tests.ingest.support import count, dump, new_db

SID = "99999999-9999-4999-8999-999999999999"
NOW = "2026-03-01T00:00:00.000Z"


def _assistant(i: int, out: int) -> bytes:
    usage = {"input_tokens": 1, "output_tokens": out, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    obj = {
        "type": "assistant",
        "sessionId": SID,
        "uuid": f"u{i}",
        "timestamp": f"2026-02-01T00:00:0{i}.000Z",
        "message": {"id": f"msg_{i}", "model": "claude-sonnet-4-5", "content": [], "usage": usage},
    }
    return orjson.dumps(obj) + b"\n"


def test_superseded_generation_still_counts(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "-p").mkdir(parents=True)
    f = root / "-p" / f"{SID}.jsonl"
    f.write_bytes(_assistant(1, 100) + _assistant(2, 200))
    conn = new_db(tmp_path / "x.db")
    ingest_roots(conn, [root], now=NOW)
    # rewritten in place, shorter: msg_2 is gone, msg_3 is new
    f.write_bytes(_assistant(1, 100) + _assistant(3, 30))
    os.utime(f, ns=(1, 1))
    s = ingest_roots(conn, [root], now="2026-03-02T00:00:00.000Z")
    assert s.resets == 1
    assert count(conn, "SELECT max(origin_gen) FROM events_raw WHERE origin = ?", (f"-p/{SID}.jsonl",)) == 1
    outputs = dict(conn.execute("SELECT message_id, output FROM token_usage").fetchall())
    assert outputs == {"msg_1": 100, "msg_2": 200, "msg_3": 30}
    # replay from the log alone agrees with the live rows, in either file order
    for order in ("log", "reverse"):
        dst = new_db(tmp_path / f"{order}.db")
        rebuild_projections(conn, dst, origin_order=order)
        assert dump(dst) == dump(conn)
    # the log says which lines are current: generation 1 holds msg_1 and msg_3 only
    current = conn.execute(
        "SELECT payload_bytes(codec, payload) FROM events_raw WHERE origin = ? AND origin_gen = 1 AND source = 'jsonl'"
        " ORDER BY origin_offset",
        (f"-p/{SID}.jsonl",),
    ).fetchall()
    assert [orjson.loads(bytes(p))["message"]["id"] for (p,) in current] == ["msg_1", "msg_3"]
