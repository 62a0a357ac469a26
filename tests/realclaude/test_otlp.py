"""What a real Claude Code 2.1.332 exports over OTLP/HTTP, checked live (docs/claude-code.md §4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.realclaude.capture import OUT, otlp_scenario
from tests.realclaude.scenarios import Capture


def log_records(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every log record's attributes as a plain dict (the value of its one typed member)."""
    out = []
    for body in bodies:
        for rl in body["resourceLogs"]:
            for sl in rl["scopeLogs"]:
                for lr in sl["logRecords"]:
                    out.append({a["key"]: next(iter(a["value"].values())) for a in lr["attributes"]})
    return out


def metric_names(bodies: list[dict[str, Any]]) -> set[str]:
    return {
        m["name"] for b in bodies for rm in b["resourceMetrics"] for sm in rm["scopeMetrics"] for m in sm["metrics"]
    }


@pytest.fixture(scope="module")
def json_export(claude_code: Path, tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return otlp_scenario(claude_code, tmp_path_factory.mktemp("otlp-json"), "http/json")


def test_json_logs_carry_api_requests_joined_to_the_transcript(json_export: Capture) -> None:
    logs = [h for h in json_export.hits if h.kind == "otlp" and h.name == "logs"]
    assert logs and all(h.headers["Content-Type"] == "application/json" for h in logs)
    records = log_records([h.json() for h in logs])
    api = [r for r in records if r["event.name"] == "api_request"]
    assert len(api) == 2  # the Read turn and the answer
    usage = {k: api[0][k] for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_5m_tokens")}
    assert usage == {
        "input_tokens": 1200,
        "output_tokens": 40,
        "cache_read_tokens": 5000,
        "cache_creation_5m_tokens": 300,
    }
    assert isinstance(api[0]["input_tokens"], int)  # a JSON number, not the string the OTLP spec prescribes
    sent = [q.message_id.replace("msg_", "req_") for q in json_export.requests if q.is_messages and q.message_id]
    assert [r["request_id"] for r in api] == sent  # the API's request-id header
    assert {r["query_source"] for r in api} == {"sdk"}  # claude -p's main thread
    run = json_export.runs[0]
    records_in_transcript = [json.loads(line) for line in run.main_transcripts()[0].read_text().splitlines()]
    uuids = {r["uuid"] for r in records_in_transcript if r.get("type") == "assistant"}
    response = next(r for r in records if r["event.name"] == "assistant_response")
    assert response["message.uuid"] in uuids
    prompt = next(r for r in records if r["event.name"] == "user_prompt")
    assert prompt["prompt"] == "<REDACTED>" and prompt["prompt.id"] == api[0]["prompt.id"]


def test_json_metrics_are_the_session_counters(json_export: Capture) -> None:
    metrics = [h.json() for h in json_export.hits if h.kind == "otlp" and h.name == "metrics"]
    assert {"claude_code.session.count", "claude_code.token.usage", "claude_code.cost.usage"} <= metric_names(metrics)


def test_the_json_fixtures_have_the_live_attributes(json_export: Capture) -> None:
    fixture = [json.loads(p.read_text()) for p in sorted((OUT / "otlp" / "http-json").glob("logs-*.json"))]
    live = [h.json() for h in json_export.hits if h.kind == "otlp" and h.name == "logs"]

    def shapes(bodies: list[dict[str, Any]]) -> dict[str, frozenset[str]]:
        return {r["event.name"]: frozenset(r) for r in log_records(bodies)}

    assert shapes(fixture) == shapes(live)


def test_protobuf_exports(claude_code: Path, tmp_path: Path) -> None:
    cap = otlp_scenario(claude_code, tmp_path, "http/protobuf")
    otlp = [h for h in cap.hits if h.kind == "otlp"]
    assert {h.name for h in otlp} >= {"logs", "metrics"}
    assert all(h.headers["Content-Type"] == "application/x-protobuf" for h in otlp)
    logs = b"".join(h.body for h in otlp if h.name == "logs")
    assert b"claude_code.api_request" in logs and b"req_standin_0001" in logs
