"""Property: no mutation of a transcript stops the pipeline (SPEC §12).

A projects root holds one good file and one file built from arbitrary mutations of good records
(random bytes, impossible timestamps, ``1e400``, ``NaN``, negative and fractional tokens,
overlong strings, NULs, lone surrogates, BOMs, CRLF, lines past ``max_line_bytes``). Ingest
never raises and stores the good file's totals exactly; ``replay`` equals the live projections.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.ingest.backfill import ingest_roots
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.reliability.support import assert_replay_ok, q
from tests.usage_rows import BY_BUCKET

GOOD = "55555555-5555-4555-8555-555555555555"
BAD = "66666666-6666-4666-8666-666666666666"
NOW = "2026-03-01T00:00:00.000Z"
CAP = 2048  # a small max_line_bytes, so oversized markers are part of the fuzz


def _good() -> bytes:
    out = b""
    for i in range(4):
        msg = {
            "id": f"msg_good_{i}",
            "model": "claude-opus-4-6",
            "role": "assistant",
            "content": [{"type": "text", "text": "fine"}],
            "usage": {"input_tokens": 10 + i, "output_tokens": 100 + i, "cache_read_input_tokens": 1000},
        }
        out += (
            orjson.dumps(
                {
                    "type": "assistant",
                    "sessionId": GOOD,
                    "uuid": f"g{i}",
                    "timestamp": f"2026-01-01T00:00:0{i}.000Z",
                    "message": msg,
                }
            )
            + b"\n"
        )
    return out


GOOD_TOTALS = {"input": 46, "output": 406, "cache_read": 4000}

# raw JSON fragments for values the guards would refuse or the decoder finds hard
ODD_VALUES = [
    b"1e400",
    b"-1e400",
    b"NaN",
    b"-5",
    b"2.5",
    b"true",
    b"null",
    b'"12"',
    b"18446744073709551616",
    b"9" * 400,
    b'"\\ud800"',
    b'"\\u0000"',
    b'"' + b"x" * 3000 + b'"',
    b"[]",
    b"{}",
]
ODD_TIMES = [
    b'"2026-13-45T25:61:61.999Z"',
    b'"9999-12-31T23:00:00-05:00"',
    b'"0000-01-01T00:00:00Z"',
    b'"2026-02-30T00:00:00.000Z"',
    b'"yesterday"',
    b"12345",
    b"null",
    b'"\\udc9d"',
    b'"2026-01-01T00:00:00.000Z\\u0000"',
]
KEYS = [b"input_tokens", b"output_tokens", b"cache_read_input_tokens", b"cache_creation_input_tokens"]


@st.composite
def bad_line(draw: st.DrawFn) -> bytes:
    i = draw(st.integers(0, 9999))
    kind = draw(st.sampled_from(["assistant", "user", "progress", "system", "summary", "x"]))
    usage = (
        b"{"
        + b",".join(
            b'"' + k + b'":' + draw(st.sampled_from([*ODD_VALUES, b"7", b"0"]))
            for k in draw(st.lists(st.sampled_from(KEYS), max_size=4))
        )
        + b"}"
    )
    ts = draw(st.sampled_from([*ODD_TIMES, b'"2026-01-02T00:00:00.000Z"']))
    line = (
        b'{"type":"'
        + kind.encode()
        + b'","sessionId":"'
        + BAD.encode()
        + b'","uuid":"b'
        + str(i).encode()
        + b'","timestamp":'
        + ts
        + b',"message":{"id":"msg_bad_'
        + str(i).encode()
        + b'","model":'
        + draw(st.sampled_from([b'"claude-opus-4-6"', b"null", b'"\\ud83d"', b"5"]))
        + b',"role":"assistant","content":[{"type":"text","text":"'
        + b"y" * draw(st.sampled_from([0, 10, 5000]))
        + b'"}],"usage":'
        + usage
        + b"}}"
    )
    how = draw(st.sampled_from(["as-is", "bom", "bytes", "cut", "nul"]))
    if how == "bom":
        line = b"\xef\xbb\xbf" + line
    elif how == "bytes":
        line = draw(st.binary(max_size=64)).replace(b"\n", b" ")
    elif how == "cut":
        line = line[: draw(st.integers(0, len(line)))]
    elif how == "nul":
        line = line.replace(b'"fine"', b"\x00").replace(b"yyy", b"\x00\xff\xfe", 1)
    return line + draw(st.sampled_from([b"\n", b"\r\n"]))


# every example runs an ingest and a full replay (two rebuilds): a few in the default suite,
# many under `make reliability`
QUICK = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


def check_mutated_file(lines: list[bytes], bad_first: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root = work / "projects"
        (root / "-p").mkdir(parents=True)
        (root / "-p" / f"{GOOD}.jsonl").write_bytes(_good())
        (root / "-p" / f"{BAD}.jsonl").write_bytes(b"".join(lines))
        if bad_first:  # the mutated file in the same batch as the good one, before it
            (root / "-p" / f"{BAD}.jsonl").rename(root / "-p" / "00000000-0000-4000-8000-000000000000.jsonl")
        db = work / "f.db"
        conn = connect(db)
        migrate(conn)
        summary = ingest_roots(conn, [root], now=NOW, max_line_bytes=CAP)
        conn.close()
        # the core's validation caught everything: no guard trigger fired, no row had to be isolated
        assert summary.isolated == 0
        got: dict[str, Any] = {
            str(b): int(n)
            for b, n in q(db, f"SELECT bucket, sum(tokens) FROM {BY_BUCKET} WHERE session_id = ? GROUP BY 1", (GOOD,))
        }
        assert {k: got[k] for k in GOOD_TOTALS} == GOOD_TOTALS
        assert_replay_ok(db, work)


@QUICK
@given(st.lists(bad_line(), min_size=1, max_size=8), st.booleans())
def test_a_mutated_file_never_stops_the_good_one(lines: list[bytes], bad_first: bool) -> None:
    check_mutated_file(lines, bad_first)


@pytest.mark.slow
@pytest.mark.timeout(1800)
@LONG
@given(st.lists(bad_line(), min_size=1, max_size=8), st.booleans())
def test_a_mutated_file_never_stops_the_good_one_long(lines: list[bytes], bad_first: bool) -> None:
    check_mutated_file(lines, bad_first)
