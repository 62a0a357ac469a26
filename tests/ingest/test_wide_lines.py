"""A line under max_line_bytes whose decoding would blow the memory budget (SPEC §11) is logged as an
oversized marker, counted and logged, like a line past the cap (a regression: a 60 MB line of
``[{},{},...]`` took 1.87 GB to ingest); what its head and tail hold still counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner
from structlog.testing import capture_logs

from ingestd.cli import cli
from ingestd.store.connection import connect
from ingestd.store.payload import decode as decode_payload
from tests.usage_rows import BY_BUCKET

SID = "eeeeeeee-0000-4000-8000-000000000001"


def _ingest(tmp_path: Path, *lines: str) -> tuple[Any, Path]:
    """``ingestd ingest --json`` of one transcript holding ``lines``: (the CLI result, the database)."""
    d = tmp_path / "p" / "-tmp-w"
    d.mkdir(parents=True)
    (d / f"{SID}.jsonl").write_text("\n".join(lines) + "\n")
    db = tmp_path / "x.db"
    res = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(tmp_path / "p"), "--json"])
    assert res.exit_code == 0, res.output
    return res, db


def test_a_wide_line_is_an_oversized_marker_and_its_usage_counts(tmp_path: Path) -> None:
    usage = {"input_tokens": 10, "output_tokens": 5}
    wide = (
        json.dumps({"type": "assistant", "sessionId": SID, "message": {"id": "msg_w", "model": "claude-sonnet-4-5"}})[
            :-2
        ]
        + ', "content": ['
        + ",".join(["{}"] * 1_500_000)
        + "]}, "
        + json.dumps({"usage": usage})[1:-1]
        + ', "uuid": "u1", "timestamp": "2026-02-01T10:00:00.000Z"}'
    )
    assert json.loads(wide)["message"]["id"] == "msg_w"
    res, db = _ingest(tmp_path, wide)
    assert orjson.loads(res.stdout)["oversized"] == 1
    assert '"reason": "values"' in res.stderr or '"reason":"values"' in res.stderr
    conn = connect(db)
    rows = conn.execute("SELECT codec, payload FROM events_raw WHERE event_type = 'oversized'").fetchall()
    assert len(rows) == 1
    marker = orjson.loads(decode_payload(conn, rows[0][0], rows[0][1]))["oversized"]
    assert marker["reason"] == "values" and marker["length"] == len(wide)
    got = dict(conn.execute(f"SELECT bucket, tokens FROM {BY_BUCKET} WHERE message_id = 'msg_w'").fetchall())
    assert got["input"] == 10 and got["output"] == 5


def test_a_line_nested_too_deep_is_said_and_its_usage_still_counts(tmp_path: Path) -> None:
    # Regression: a valid record past orjson's 1024 levels was `not_json` and its message was lost
    deep = "[" * 1100 + "]" * 1100
    rec = {
        "type": "assistant",
        "sessionId": SID,
        "message": {"id": "msg_d", "model": "claude-sonnet-4-5", "content": "DEEP", "usage": {"input_tokens": 7}},
        "uuid": "d1",
        "timestamp": "2026-02-01T10:00:00.000Z",
    }
    line = json.dumps(rec).replace('"DEEP"', deep)
    res, db = _ingest(tmp_path, line)
    assert orjson.loads(res.stdout)["skipped"] == {"too_deep": 1}
    conn = connect(db)
    got = dict(conn.execute(f"SELECT bucket, tokens FROM {BY_BUCKET} WHERE message_id = 'msg_d'").fetchall())
    assert got["input"] == 7
    assert CliRunner().invoke(cli, ["replay", "--db", str(db)]).exit_code == 0


def _big_number_line(mid: str, usage_at_end: bool) -> str:
    # Regression: a 5000-digit integer in a tool_use input (past MAX_INT_DIGITS) made the line
    # `number_too_large`; its message was lost without a word (cost_complete true, no usage_lost)
    usage = {"input_tokens": 21, "output_tokens": 4}
    msg = {"id": mid, "model": "claude-sonnet-4-5", "role": "assistant"}
    if not usage_at_end:
        msg["pad"] = "p" * 70_000  # the tail (64 KiB) holds neither the usage nor the number
        msg["usage"] = usage
        msg["pad2"] = "q" * 70_000
    msg["content"] = [{"type": "tool_use", "id": "t1", "name": "X", "input": {"n": "BIG"}}]
    if usage_at_end:
        msg["usage"] = usage
    rec = {"type": "assistant", "sessionId": SID, "message": msg, "uuid": mid, "timestamp": "2026-02-01T10:00:00.000Z"}
    return json.dumps(rec).replace('"BIG"', "9" * 5000)


def test_a_line_with_a_number_too_large_is_salvaged_and_its_usage_counts(tmp_path: Path) -> None:
    with capture_logs() as logs:
        res, db = _ingest(tmp_path, _big_number_line("msg_n", True), _big_number_line("msg_m", False))
    assert orjson.loads(res.stdout)["skipped"] == {"number_too_large": 2}
    said = [(e["reason"], e["usage_lost"]) for e in logs if e["event"] == "line_undecodable"]
    assert said == [("number_too_large", False), ("number_too_large", True)]
    conn = connect(db)
    got = dict(conn.execute(f"SELECT bucket, tokens FROM {BY_BUCKET} WHERE message_id = 'msg_n'").fetchall())
    assert got["input"] == 21 and got["output"] == 4
    assert CliRunner().invoke(cli, ["replay", "--db", str(db)]).exit_code == 0
