"""SPEC §11 (memory under 300 MB): every decoding of a line, a log row or a body goes through
``decode_line``, which refuses (``too_wide``) what could take more than its budget, counted before
decoding; the projector then salvages the row's head and tail (a regression: a wide line an older ingestd
logged whole took 1.9 GB to re-project; a 60 MiB line needing the lenient pass, 590 MB)."""

from __future__ import annotations

import json

from ingestd.core.decode import LENIENT_BYTES_PER_BYTE, MAX_LINE_DECODED_BYTES, VALUE_BYTES, decode_line
from ingestd.core.projector import decode_row
from ingestd.core.records import LogRow

SID = "eeeeeeee-0000-4000-8000-000000000002"


def _record(content: str) -> bytes:
    rec = {
        "type": "assistant",
        "sessionId": SID,
        "message": {"id": "msg_b", "model": "claude-sonnet-4-5", "content": "CONTENT", "usage": {"input_tokens": 9}},
        "uuid": "b1",
        "timestamp": "2026-02-01T10:00:00.000Z",
    }
    return json.dumps(rec).replace('"CONTENT"', content).encode()


def test_a_line_of_too_many_values_is_refused_before_decoding() -> None:
    values = 2 * MAX_LINE_DECODED_BYTES // VALUE_BYTES // 3  # `{},` each: 3 structural bytes' worth
    line = _record("[" + ",".join(["{}"] * values) + "]")
    assert decode_line(line).reason == "too_wide"
    small = _record("[{},{}]")
    assert decode_line(small).obj is not None
    assert decode_line(small, max_decoded_bytes=VALUE_BYTES).reason == "too_wide"


def test_the_projector_salvages_a_wide_row_an_older_ingestd_logged_whole() -> None:
    # before the wide-line limit a line like this was logged whole as `assistant`: re-projection
    # (migrate, serve start-up, replay) decodes it on demand, now within the budget
    values = 2 * MAX_LINE_DECODED_BYTES // VALUE_BYTES // 3
    line = _record("[" + ",".join(["{}"] * values) + "]")
    row = LogRow(1, "jsonl", "assistant", line, "2026-02-01T10:00:00.000Z", SID, "/p/x.jsonl", 0, 0)
    rec = decode_row(row)
    assert rec is not None and rec["uuid"] == "b1" and rec["sessionId"] == SID
    assert rec["message"]["usage"] == {"input_tokens": 9} and "content" not in rec["message"]


def test_the_lenient_pass_runs_only_within_the_budget() -> None:
    # orjson refuses a raw invalid byte and a lone surrogate escape; the lenient pass takes about
    # LENIENT_BYTES_PER_BYTE per byte, so past budget / that the line is salvaged, not decoded
    longest = MAX_LINE_DECODED_BYTES // LENIENT_BYTES_PER_BYTE
    for bad in (b"\xff", b"\\ud800"):
        line = _record('"' + "x" * (longest + 10) + '"').replace(b'xxx"', b"x" + bad + b'"')
        assert decode_line(line).reason == "too_wide"
        row = LogRow(1, "jsonl", "invalid", line, "2026-02-01T10:00:00.000Z", SID, "/p/x.jsonl", 0, 0)
        rec = decode_row(row)
        assert rec is not None and rec["message"]["usage"] == {"input_tokens": 9}
        short = _record('"' + "x" * 1000 + '"').replace(b'xxx"', b"x" + bad + b'"')
        assert decode_line(short).recovered
        assert decode_line(short, max_decoded_bytes=len(short) * LENIENT_BYTES_PER_BYTE).recovered
        assert decode_line(short, max_decoded_bytes=len(short) * LENIENT_BYTES_PER_BYTE - 1).reason == "too_wide"
