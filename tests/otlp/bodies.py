"""OTLP bodies for the tests: the real captures' folder, and requests built with opentelemetry-proto
(protobuf) or as the JSON mapping, shaped like Claude Code 2.1.332's (docs/claude-code.md §4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "claude-2.1.332" / "otlp"
LIVE = Path(__file__).resolve().parents[3] / "shared" / "live-2.1.332"
SESSION = "f062db45-0619-43b9-910c-e628426ea014"  # the session of ../shared/live-2.1.332's run
FIXTURE_SESSION = "34a389ae-895e-44d4-baaf-29e6abcf10c8"  # the session of fixtures/claude-2.1.332/otlp
BASE_NS = 1796163872824000000


def _any(v: Any) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    return AnyValue(string_value=str(v))


def api_request_attrs(
    *,
    seq: int,
    session: str = SESSION,
    prompt: str = "p-1",
    model: str = "claude-sonnet-4-5-20250929",
    input_tokens: int = 1200,
    output_tokens: int = 40,
    cache_read: int = 5000,
    cache_creation: int = 300,
    split: tuple[int, int] | None = (300, 0),
    request_id: str | None = None,
    query_source: str = "sdk",
    cost_usd: float = 0.006825,
) -> dict[str, Any]:
    """The attributes of one ``api_request`` event (its integers as ints)."""
    a: dict[str, Any] = {
        "session.id": session,
        "event.name": "api_request",
        "event.sequence": seq,
        "prompt.id": prompt,
        "model": model,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_tokens": cache_read,
        "cache_creation_tokens": cache_creation,
        "cost_usd": cost_usd,
        "duration_ms": 34,
        "speed": "normal",
        "query_source": query_source,
    }
    if split is not None:
        a["cache_creation_5m_tokens"], a["cache_creation_1h_tokens"] = split
    if request_id is not None:
        a["request_id"] = request_id
    return a


def event_attrs(name: str, *, seq: int, session: str = SESSION, prompt: str = "p-1", **more: Any) -> dict[str, Any]:
    """The attributes of any other event."""
    return {"session.id": session, "event.name": name, "event.sequence": seq, "prompt.id": prompt, **more}


def api_request_pb(**kw: Any) -> LogRecord:
    """One ``api_request`` log record (protobuf)."""
    return log_record_pb(api_request_attrs(**kw))


def log_record_pb(attrs: dict[str, Any], time_ns: int | None = None) -> LogRecord:
    seq = int(attrs.get("event.sequence", 0))
    t = time_ns if time_ns is not None else BASE_NS + seq * 1_000_000
    return LogRecord(
        time_unix_nano=t,
        observed_time_unix_nano=t,
        body=AnyValue(string_value=f"claude_code.{attrs['event.name']}"),
        attributes=[KeyValue(key=k, value=_any(v)) for k, v in attrs.items()],
    )


def pb_logs(records: list[LogRecord]) -> bytes:
    """An ``ExportLogsServiceRequest`` holding ``records`` (protobuf bytes)."""
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    rl.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value="claude-code")))
    sl = rl.scope_logs.add()
    sl.scope.name = "com.anthropic.claude_code.events"
    sl.log_records.extend(records)
    return bytes(req.SerializeToString())


def _json_value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": v}  # a JSON number, as Claude Code 2.1.332 sends it
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def json_record(attrs: dict[str, Any], time_ns: int | None = None) -> dict[str, Any]:
    seq = int(attrs.get("event.sequence", 0))
    t = time_ns if time_ns is not None else BASE_NS + seq * 1_000_000
    return {
        "timeUnixNano": str(t),
        "observedTimeUnixNano": str(t),
        "body": {"stringValue": f"claude_code.{attrs['event.name']}"},
        "attributes": [{"key": k, "value": _json_value(v)} for k, v in attrs.items()],
    }


def json_logs(records: list[dict[str, Any]]) -> bytes:
    """An OTLP JSON logs request holding ``records`` (``json_record`` dicts)."""
    return orjson.dumps(
        {
            "resourceLogs": [
                {
                    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "claude-code"}}]},
                    "scopeLogs": [{"scope": {"name": "com.anthropic.claude_code.events"}, "logRecords": records}],
                }
            ]
        }
    )


def json_metrics(points: list[tuple[str, dict[str, Any], float, int, int]]) -> bytes:
    """An OTLP JSON metrics request: each ``(name, attributes, value, start_ns, end_ns)`` a delta sum point."""
    metrics = [
        {
            "name": name,
            "unit": "",
            "sum": {
                "aggregationTemporality": 1,
                "isMonotonic": True,
                "dataPoints": [
                    {
                        "attributes": [{"key": k, "value": _json_value(v)} for k, v in attrs.items()],
                        "startTimeUnixNano": str(start),
                        "timeUnixNano": str(end),
                        "asDouble": value,
                    }
                ],
            },
        }
        for name, attrs, value, start, end in points
    ]
    return orjson.dumps({"resourceMetrics": [{"resource": {}, "scopeMetrics": [{"metrics": metrics}]}]})
