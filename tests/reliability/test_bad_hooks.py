"""The bad-input catalogue, hook side (SPEC §3, §10, §12): every body gets a clear answer.

Each case is one delivery with its expected outcome: a 4xx with the reason code and nothing
written, or a 200 with the body stored verbatim (unknown events, odd but well-formed objects,
damaged text recovered). Never a 500, never a crash, and a delivery stored before the bad one
(the baseline) is unchanged afterwards: its log row, its events row, its session and agent.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from ingestd.core.storable import storable
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import assemble
from tests.hookclient import JSON_HEADERS
from tests.reliability.support import SID, assert_kept, q, snapshot

Client = TestClient[Any, Any]
BAD_SID = "bad-session"
MIB = 1 << 20


def ev(name: Any = "Stop", sid: Any = BAD_SID, **kw: Any) -> bytes:
    return orjson.dumps({"hook_event_name": name, "session_id": sid, **kw})


def raw(text: str) -> bytes:
    """A body spelled by hand (escapes kept as written)."""
    return text.encode()


@dataclass(frozen=True)
class Case:
    """One bad delivery. ``status`` 200: stored (``event_type`` as given); else the error ``code``."""

    id: str
    body: bytes | None
    status: int
    code: str | None = None
    event_type: str | None = None
    method: str = "POST"
    headers: tuple[tuple[str, str], ...] = ()
    chunked: bool = False


DEEP = 100_000
CASES = [
    Case("empty", b"", 400, "empty_body"),
    Case("whitespace-only", b" \r\n\t ", 400, "empty_body"),
    Case("not-json", b"hook_event_name=Stop&session_id=s", 400, "invalid_json"),
    Case("truncated-json", ev()[:-3], 400, "invalid_json"),
    Case("json-array", b'[{"hook_event_name":"Stop","session_id":"s"}]', 400, "not_an_object"),
    Case("json-string", b'"Stop"', 400, "not_an_object"),
    Case("json-number", b"42", 400, "not_an_object"),
    Case("json-null", b"null", 400, "not_an_object"),
    # too deep to take apart is said as such (a regression: it read "not valid JSON")
    Case("deep-array-100k", b"[" * DEEP + b"]" * DEEP, 400, "too_deep"),
    Case("deep-object-100k", b'{"a":' * DEEP + b"1" + b"}" * DEEP, 400, "too_deep"),
    Case(
        "deep-inside-event-100k",
        raw('{"hook_event_name":"Stop","session_id":"s","x":') + b"[" * DEEP + b"]" * DEEP + b"}",
        400,
        "too_deep",
    ),
    Case(
        "deep-but-parseable-500",
        raw('{"hook_event_name":"Stop","session_id":"bad-session","x":') + b"[" * 500 + b"]" * 500 + b"}",
        200,
        event_type="Stop",
    ),
    Case(
        "deep-900-with-lone-surrogate",
        raw('{"hook_event_name":"Stop","session_id":"s","x":"\\ud800","y":') + b"[" * 900 + b"]" * 900 + b"}",
        400,
        "too_deep",
    ),
    Case("five-mib", ev(prompt="x" * (5 * MIB)), 413, "body_too_large"),
    Case("five-mib-chunked", ev(prompt="x" * (5 * MIB)), 413, "body_too_large", chunked=True),
    Case("event-name-number", ev(name=7), 400, "missing_hook_event_name"),
    Case("event-name-null", ev(name=None), 400, "missing_hook_event_name"),
    Case("event-name-empty", ev(name=""), 400, "missing_hook_event_name"),
    Case("event-name-object", ev(name={"a": 1}), 400, "missing_hook_event_name"),
    Case("session-id-null", ev(sid=None), 400, "missing_session_id"),
    Case("session-id-number", ev(sid=12345), 400, "missing_session_id"),
    Case("session-id-list", ev(sid=["s"]), 400, "missing_session_id"),
    Case("session-id-missing", b'{"hook_event_name":"Stop"}', 400, "missing_session_id"),
    Case("event-name-missing", b'{"session_id":"s"}', 400, "missing_hook_event_name"),
    Case(
        "lone-surrogate",
        raw('{"hook_event_name":"Stop","session_id":"bad-session","last":"cut \\ud83d"}'),
        200,
        event_type="Stop",
    ),
    Case(
        "lone-low-surrogate-in-name",
        raw('{"hook_event_name":"Odd\\udc9d","session_id":"bad-session"}'),
        200,
        event_type="Odd\U000f049d",  # U+DC9D kept one-to-one (decode._fix)
    ),
    Case(
        "invalid-utf8",
        b'{"hook_event_name":"Stop","session_id":"bad-session","p":"\xff\xfe\xc3("}',
        200,
        event_type="Stop",
    ),
    Case(
        "invalid-utf8-in-key", b'{"hook_event_name":"Stop","session_id":"bad-session","\xc0":1}', 200, event_type="Stop"
    ),
    Case("nul-byte-raw", b'{"hook_event_name":"Stop","session_id":"s"}\x00', 400, "invalid_json"),
    Case("nul-escaped", ev(prompt="a\x00b"), 200, event_type="Stop"),
    Case(
        "huge-float-1e400",
        raw('{"hook_event_name":"Stop","session_id":"bad-session","n":1e400}'),
        200,
        event_type="Stop",
    ),
    Case(
        "huge-int-400-digits",
        raw('{"hook_event_name":"Stop","session_id":"bad-session","n":1' + "0" * 400 + "}"),
        200,
        event_type="Stop",
    ),
    Case(
        "huge-int-5000-digits",
        raw('{"hook_event_name":"Stop","session_id":"s","n":1' + "0" * 5000 + "}"),
        400,
        "number_too_large",
    ),
    Case(
        "huge-int-as-tool-use-id",
        raw('{"hook_event_name":"PreToolUse","session_id":"bad-session","tool_use_id":1' + "0" * 400 + "}"),
        200,
        event_type="PreToolUse",
    ),
    Case("unknown-event", ev(name="TeammateIdle", team={"x": [1, 2]}), 200, event_type="TeammateIdle"),
    # the log holds the name in the form both stores can hold (ingestd.core.storable)
    Case("event-name-10kb", ev(name="E" * 10_240), 200, event_type=storable("E" * 10_240)),
    Case("session-id-10kb", ev(sid="s" * 10_240), 200, event_type="Stop"),
    Case(
        "wrong-field-types",
        ev(
            name="PostToolUse",
            tool_use_id=5,
            tool_name=["Bash"],
            tool_input="x",
            tool_response=7,
            cwd={},
            transcript_path=3,
            agent_id=[],
            agent_type=1.5,
        ),
        200,
        event_type="PostToolUse",
    ),
    Case(
        "subagent-stop-wrong-types",
        ev(name="SubagentStop", agent_id={"a": 1}, agent_type=[], stop_hook_active="x"),
        200,
        event_type="SubagentStop",
    ),
    Case("session-end-reason-object", ev(name="SessionEnd", reason={"r": 1}), 200, event_type="SessionEnd"),
    Case(
        "duplicate-keys",
        raw('{"hook_event_name":"Stop","hook_event_name":"Notification","session_id":"bad-session"}'),
        200,
        event_type="Notification",
    ),
    # a byte-order mark before the object is skipped by the one decoder (SPEC §12: accepted everywhere)
    Case("bom-prefixed", b"\xef\xbb\xbf" + ev(), 200, event_type="Stop"),
    # A browser's cross-origin "simple" POSTs (no preflight) carry only these types (SPEC §10).
    Case("text-plain-content-type", ev(), 415, "unsupported_media_type", headers=(("Content-Type", "text/plain"),)),
    Case(
        "form-content-type",
        ev(),
        415,
        "unsupported_media_type",
        headers=(("Content-Type", "application/x-www-form-urlencoded"),),
    ),
    Case(
        "multipart-content-type",
        ev(),
        415,
        "unsupported_media_type",
        headers=(("Content-Type", "multipart/form-data; boundary=x"),),
    ),
    Case(
        "json-with-charset",
        ev(),
        200,
        event_type="Stop",
        headers=(("Content-Type", "application/json; charset=utf-8"),),
    ),
    Case("idempotency-key-too-long", ev(), 400, "bad_idempotency_key", headers=(("Idempotency-Key", "k" * 201),)),
    Case("idempotency-key-tab", ev(), 400, "bad_idempotency_key", headers=(("Idempotency-Key", "a\tb"),)),
    Case("get-instead-of-post", None, 405, "method_not_allowed", method="GET"),
    Case("put-instead-of-post", ev(), 405, "method_not_allowed", method="PUT"),
]


@pytest.fixture
async def client(aiohttp_client: Callable[..., Awaitable[Client]], tmp_path: Path) -> AsyncIterator[Client]:
    cfg = ServeConfig(db_path=tmp_path / "h.db", tail=False, schedule=False, watchdog_interval_s=3600)
    c = await aiohttp_client(assemble(cfg), headers=JSON_HEADERS)
    # the baseline: one good delivery stored before every bad one
    resp = await c.post("/hooks", data=ev(name="UserPromptSubmit", sid=SID, prompt="hello"))
    assert resp.status == 200
    yield c


def test_catalogue_is_at_least_forty_with_distinct_ids() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 40


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_bad_hook_body(client: Client, case: Case, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    before = snapshot(db)
    data: Any = case.body
    if case.chunked and data is not None:
        payload = data

        async def chunks() -> AsyncIterator[bytes]:
            for i in range(0, len(payload), 1 << 16):
                yield payload[i : i + (1 << 16)]

        data = chunks()
    elif data is not None and len(data) > MIB:
        data = io.BytesIO(data)  # with a Content-Length
    resp = await client.request(case.method, "/hooks", data=data, headers=dict(case.headers))
    text = await resp.read()
    assert resp.status == case.status, text[:300]
    after = snapshot(db)
    if case.status != 200:
        doc = orjson.loads(text)
        assert doc["error"]["status"] == case.status
        assert doc["error"]["code"] == case.code
        assert doc["error"]["message"]
        assert after == before  # nothing written
        return
    assert text == b""
    new = after["events_raw"][len(before["events_raw"]) :]
    assert len(new) == 1
    got = q(db, "SELECT payload_bytes(codec, payload), event_type, source FROM events_raw WHERE id = ?", (new[0][0],))[
        0
    ]
    assert bytes(got[0]) == case.body  # verbatim, damaged bytes included
    assert got[1:] == (case.event_type, "hook")
    assert_kept(before, after, session=SID)
    # the accepted event is projected in the same transaction
    assert q(db, "SELECT count(*) FROM events WHERE raw_event_id = ?", (new[0][0],)) == [(1,)]
