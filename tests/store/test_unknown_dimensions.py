"""A usage field or value the pricer does not know never prices as the standard rate (SPEC §5.1,
``ingestd.core.billing``): real corpus records, each mutated in one billing dimension with a value
no price row or rule knows, make the cost answer incomplete with a reason; unmutated, the same
records are priced and complete.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.core.framing import Framer
from ingestd.core.keys import short_hash
from ingestd.core.records import line_row
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, resolve_zone
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.writer import apply_batch
from tests.conftest import CORPUS

ALL = Window(None, None)
UTC = resolve_zone("UTC", {})
READ_AT = "2026-12-01T00:00:00.000Z"  # after every corpus record (a later timestamp is refused)


def _corpus_records(limit: int = 60) -> list[dict[str, Any]]:
    """Assistant records of the real corpus whose usage is billed (output > 0, a real model)."""
    out: list[dict[str, Any]] = []
    if not CORPUS.is_dir():
        return out
    for path in sorted((CORPUS / "claude-projects").rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            msg = rec.get("message") if isinstance(rec, dict) else None
            u = msg.get("usage") if isinstance(msg, dict) else None
            if rec.get("type") != "assistant" or not isinstance(u, dict) or not isinstance(msg.get("id"), str):
                continue
            if (
                not isinstance(u.get("output_tokens"), int)
                or u["output_tokens"] < 20
                or msg.get("model") == "<synthetic>"
            ):
                continue
            out.append(rec)
            if len(out) % 7 == 0 and len(out) >= limit:
                return out
    return out


RECORDS = _corpus_records()
UNKNOWN = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=8).map(lambda s: f"x-{s}")


def _usage(rec: dict[str, Any]) -> dict[str, Any]:
    u: dict[str, Any] = rec["message"]["usage"]
    return u


def _model(rec: dict[str, Any], v: str) -> None:
    rec["message"]["model"] = f"claude-{v}"


def _speed(rec: dict[str, Any], v: str) -> None:
    _usage(rec)["speed"] = v


def _geo(rec: dict[str, Any], v: str) -> None:
    _usage(rec)["inference_geo"] = v


def _tier(rec: dict[str, Any], v: str) -> None:
    _usage(rec)["service_tier"] = v


def _iteration(rec: dict[str, Any], v: str) -> None:
    _usage(rec)["iterations"] = [{"type": v, "input_tokens": 10, "output_tokens": 5}]


def _server_tool(rec: dict[str, Any], v: str) -> None:
    _usage(rec).setdefault("server_tool_use", {})[f"{v}_requests"] = 2


def _cache_ttl(rec: dict[str, Any], v: str) -> None:
    _usage(rec).setdefault("cache_creation", {})[f"ephemeral_{v}_input_tokens"] = 100


def _counter(rec: dict[str, Any], v: str) -> None:
    _usage(rec)[f"{v}_tokens"] = 100


DIMENSIONS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "model": _model,
    "speed": _speed,
    "inference_geo": _geo,
    "service_tier": _tier,
    "iterations[].type": _iteration,
    "server_tool_use.*": _server_tool,
    "cache_creation.*": _cache_ttl,
    "a new usage counter": _counter,
}


@pytest.fixture(scope="module")
def template() -> bytes:
    conn = connect(":memory:")
    migrate(conn)
    data = conn.serialize("main")
    conn.close()
    return bytes(data)


def _cost(template: bytes, rec: dict[str, Any]) -> dict[str, Any]:
    conn = connect(":memory:")
    conn.deserialize("main", template)
    sid = str(rec.get("sessionId") or "s")
    origin = f"-p/{sid}.jsonl"
    rows = [
        line_row(
            ln, origin=origin, origin_hash=short_hash(origin.encode()), gen=0, received_at=READ_AT, path_session=sid
        )
        for ln in Framer(0).feed(orjson.dumps(rec) + b"\n")
    ]
    apply_batch(conn, rows)
    return cost_report(conn, by=None, window=ALL, zone=UTC)


@pytest.mark.skipif(not RECORDS, reason=f"real corpus not found at {CORPUS}")
def test_the_records_unmutated_are_priced_and_complete(template: bytes) -> None:
    for rec in RECORDS:
        doc = _cost(template, rec)
        assert doc["cost_complete"] is True, rec["message"]["model"]


@pytest.mark.skipif(not RECORDS, reason=f"real corpus not found at {CORPUS}")
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(range(len(RECORDS or [None]))), st.sampled_from(sorted(DIMENSIONS)), UNKNOWN)
def test_an_unknown_value_of_any_dimension_makes_the_answer_incomplete(
    template: bytes, i: int, dimension: str, value: str
) -> None:
    rec = copy.deepcopy(RECORDS[i])
    DIMENSIONS[dimension](rec, value)
    doc = _cost(template, rec)
    assert doc["cost_complete"] is False, (dimension, value)
    why = [r for u in doc["unpriced"].values() for r in u["reasons"]] + doc["uncounted"]["reasons"]
    assert why, (dimension, value)  # always with a reason
