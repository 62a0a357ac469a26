"""POST /v1/logs, /v1/metrics, /v1/traces through the daemon's own app, writer and database: the
real bodies Claude Code 2.1.332 sent (JSON and protobuf), bodies built with opentelemetry-proto,
and every kind of bad body."""

from __future__ import annotations

import gzip
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import assemble
from ingestd.http.hooks import HookConfig
from ingestd.http.otlp import rpc_status
from ingestd.store.connection import connect
from ingestd.store.payload import decode
from tests.otlp.bodies import FIXTURE_SESSION, FIXTURES, SESSION, api_request_pb, json_logs, pb_logs

Client = TestClient[Any, Any]
JSON = {"Content-Type": "application/json"}
PB = {"Content-Type": "application/x-protobuf"}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ingestd.db"


@pytest.fixture
def make_client(aiohttp_client: Any, db: Path) -> Callable[..., Awaitable[Client]]:
    async def make(**kw: Any) -> Client:
        cfg = ServeConfig(db_path=db, tail=False, schedule=False, watchdog_interval_s=3600, **kw)
        client: Client = await aiohttp_client(assemble(cfg))
        return client

    return make


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = connect(db, readonly=True)
    try:
        return [tuple(r) for r in conn.execute(sql)]
    finally:
        conn.close()


def otlp_rows(db: Path) -> list[tuple[Any, ...]]:
    return rows(db, "SELECT origin, event_type, session_id FROM events_raw WHERE source = 'otlp' ORDER BY id")


def payload_of(db: Path, event_type: str) -> bytes:
    conn = connect(db, readonly=True)
    try:
        ((codec, raw),) = list(
            conn.execute("SELECT codec, payload FROM events_raw WHERE event_type = ?", (event_type,))
        )
        return decode(conn, codec, raw)
    finally:
        conn.close()


async def test_real_json_logs_are_one_row_per_record_and_the_request_bytes_kept(make_client: Any, db: Path) -> None:
    client = await make_client()
    body = (FIXTURES / "http-json" / "logs-1.json").read_bytes()
    resp = await client.post("/v1/logs", data=body, headers=JSON)
    assert resp.status == 200 and resp.content_type == "application/json" and await resp.read() == b"{}"
    got = otlp_rows(db)
    names = [r[1] for r in got[1:]]
    records = [r for rl in orjson.loads(body)["resourceLogs"] for s in rl["scopeLogs"] for r in s["logRecords"]]
    assert got[0] == ("otlp:logs", "request", None) and len(got) == 1 + len(records)
    assert names == ["managed_settings_resolved", *["plugin_loaded"] * 4, "user_prompt", "tool_decision", "api_request"]
    assert {r[2] for r in got[1:]} == {FIXTURE_SESSION}
    assert payload_of(db, "request") == body


async def test_a_retried_or_rebatched_export_adds_nothing(make_client: Any, db: Path) -> None:
    client = await make_client()
    body = (FIXTURES / "http-json" / "logs-1.json").read_bytes()
    assert (await client.post("/v1/logs", data=body, headers=JSON)).status == 200
    n = len(otlp_rows(db))
    assert (await client.post("/v1/logs", data=body, headers=JSON)).status == 200
    assert len(otlp_rows(db)) == n
    # the same records split over two other requests: two new request rows, no new record row
    obj = orjson.loads(body)
    recs = obj["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    for part in (recs[:3], recs[3:]):
        obj["resourceLogs"][0]["scopeLogs"][0]["logRecords"] = part
        assert (await client.post("/v1/logs", data=orjson.dumps(obj), headers=JSON)).status == 200
    assert len(otlp_rows(db)) == n + 2
    assert rows(db, "SELECT count(*) FROM events_raw WHERE event_type = 'request'") == [(3,)]


async def test_real_protobuf_logs_and_metrics_match_their_json_twins(make_client: Any, db: Path) -> None:
    client = await make_client()
    for name in ("logs-1", "logs-2", "metrics-1"):
        path = "/v1/logs" if name.startswith("logs") else "/v1/metrics"
        resp = await client.post(path, data=(FIXTURES / "http-protobuf" / f"{name}.pb").read_bytes(), headers=PB)
        assert resp.status == 200 and resp.content_type == "application/x-protobuf" and await resp.read() == b""
    got = otlp_rows(db)
    assert sum(1 for r in got if r[1] == "api_request") == 2
    metric_names = {r[1] for r in got if r[0] == "otlp:metrics" and r[1] != "request"}
    assert {"claude_code.cost.usage", "claude_code.token.usage"} <= metric_names


async def test_protobuf_built_with_opentelemetry_proto_and_gzip(make_client: Any, db: Path) -> None:
    client = await make_client()
    body = gzip.compress(pb_logs([api_request_pb(seq=3, request_id="req_1")]))
    resp = await client.post("/v1/logs", data=body, headers={**PB, "Content-Encoding": "gzip"})
    assert resp.status == 200
    assert otlp_rows(db)[1:] == [("otlp:logs", "api_request", SESSION)]
    attrs = {a["key"]: a["value"] for a in orjson.loads(payload_of(db, "api_request"))["logRecord"]["attributes"]}
    assert attrs["request_id"] == {"stringValue": "req_1"} and attrs["input_tokens"] == {"intValue": "1200"}


async def test_traces_are_accepted_and_logged(make_client: Any, db: Path) -> None:
    client = await make_client()
    body = orjson.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [{"name": "s"}]}]}]})
    assert (await client.post("/v1/traces", data=body, headers=JSON)).status == 200
    assert otlp_rows(db) == [("otlp:traces", "request", None)]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "undecodable"),
        (b"[]", "not_an_object"),
        (b'{"resourceLogs": {}}', "wrong_type"),
        (b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [1]}]}]}', "wrong_type"),
        (b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"attributes": [{"key": 1}]}]}]}]}', "wrong_type"),
        (b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"timeUnixNano": "soon"}]}]}]}', "wrong_type"),
    ],
)
async def test_a_json_body_that_is_not_an_export_is_400_and_writes_nothing(
    make_client: Any, db: Path, body: bytes, reason: str
) -> None:
    client = await make_client()
    # a good record before the bad one: still nothing of the request is written
    resp = await client.post("/v1/logs", data=body, headers=JSON)
    assert resp.status == 400 and (await resp.json())["error"]["code"] == reason
    assert otlp_rows(db) == []


async def test_truncated_protobuf_is_400_with_a_status(make_client: Any, db: Path) -> None:
    client = await make_client()
    good = pb_logs([api_request_pb(seq=1)])
    resp = await client.post("/v1/logs", data=good[: len(good) // 2], headers=PB)
    assert resp.status == 400 and resp.content_type == "application/x-protobuf"
    assert (await resp.read()).startswith(b"\x08\x03\x12")  # google.rpc.Status code 3 INVALID_ARGUMENT
    assert otlp_rows(db) == []


async def test_other_content_types_and_encodings_are_415(make_client: Any, db: Path) -> None:
    client = await make_client()
    body = json_logs([])
    for headers in ({"Content-Type": "text/plain"}, {}, {**JSON, "Content-Encoding": "compress"}):
        resp = await client.post("/v1/logs", data=body, headers=headers)
        assert resp.status == 415, headers
    assert otlp_rows(db) == []


async def test_the_byte_cap_holds_for_bodies_and_gzip_bombs(make_client: Any, db: Path) -> None:
    client = await make_client(hooks=HookConfig(max_body_bytes=64 << 10))
    big = json_logs([]) + b" " * (65 << 10)
    assert (await client.post("/v1/logs", data=big, headers=JSON)).status == 413
    bomb = gzip.compress(b"{" + b" " * (50 << 20) + b"}")
    assert len(bomb) < 64 << 10
    resp = await client.post("/v1/logs", data=bomb, headers={**JSON, "Content-Encoding": "gzip"})
    assert resp.status == 413 and (await resp.json())["error"]["code"] == "body_too_large"
    whole = gzip.compress(json_logs([]))
    corrupt = whole[: len(whole) // 2]
    assert (await client.post("/v1/logs", data=corrupt, headers={**JSON, "Content-Encoding": "gzip"})).status == 400
    assert otlp_rows(db) == []


def test_rpc_status_is_a_google_rpc_status() -> None:
    # field 1 varint code, field 2 length-delimited message
    assert rpc_status(3, "bad body") == b"\x08\x03\x12\x08bad body"
    assert rpc_status(14, "x" * 200)[:4] == b"\x08\x0e\x12\xc8"


async def test_the_token_and_host_rules_apply(make_client: Any, db: Path) -> None:
    client = await make_client(token="s3cret-token-value-long-enough")
    body = json_logs([])
    assert (await client.post("/v1/logs", data=body, headers=JSON)).status == 401
    ok = await client.post(
        "/v1/logs", data=body, headers={**JSON, "Authorization": "Bearer s3cret-token-value-long-enough"}
    )
    assert ok.status == 200
    bad_host = await client.post(
        "/v1/logs", data=body, headers={**JSON, "Host": "evil.example", "Authorization": "Bearer x"}
    )
    assert bad_host.status in (401, 421)
    cross = await client.post("/v1/logs", data=body, headers={**JSON, "Origin": "https://evil.example"})
    assert cross.status == 403


def test_an_export_request_message_round_trips() -> None:
    raw = pb_logs([api_request_pb(seq=1)])
    msg = ExportLogsServiceRequest()
    msg.ParseFromString(raw)
    assert msg.resource_logs[0].scope_logs[0].log_records[0].body.string_value == "claude_code.api_request"
