"""A session's own telemetry beside its exact figures in ``tree`` (terminal and JSON) and
``GET /api/sessions/{id}/tree``: requests matched to transcript messages, those only the telemetry
shows, the disagreements, and the failed API calls of each agent, never added to the cost."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core import otlp
from ingestd.core.records import NewLogRow
from ingestd.store.writer import apply_batch
from tests.ingest.support import new_db
from tests.otlp.bodies import event_attrs, json_logs, json_record
from tests.otlp.test_reconcile import MODEL, READ_AT, SID, T0, telemetry, transcript

AGENT = "a3e9f10c2b4d5e6f7"


def api_errors() -> list[NewLogRow]:
    """Two failed calls as 2.1.332's ``api_error`` sends them (its attributes in the bundle: model,
    error, status_code, duration_ms, attempt, request_id, speed, query_source; ``agent_id`` and
    ``parent_agent_id`` stamped on a subagent's events): one of the main thread, one of a subagent."""
    main = event_attrs(
        "api_error",
        seq=8,
        session=SID,
        model=MODEL,
        error="Overloaded",
        status_code="529",
        duration_ms=812,
        attempt=1,
        speed="normal",
        query_source="sdk",
    )
    sub = event_attrs(
        "api_error",
        seq=9,
        session=SID,
        model=MODEL,
        error="Request timed out",
        duration_ms=60000,
        attempt=2,
        speed="normal",
        query_source="agent:builtin:general-purpose",
        agent_id=AGENT,
        parent_agent_id=SID,
    )
    body = json_logs([json_record(main, T0 + 5_000_000_000), json_record(sub, T0 + 6_000_000_000)])
    parsed = otlp.parse_request(otlp.LOGS, orjson.loads(body), body)
    assert isinstance(parsed, otlp.Export)
    return parsed.rows_at(READ_AT)


def _db(tmp_path: Path) -> Path:
    db = tmp_path / "t.db"
    conn = new_db(db)
    apply_batch(conn, transcript() + telemetry() + api_errors())
    conn.close()
    return db


def _run(*args: str) -> Any:
    r = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_the_tree_shows_the_sessions_telemetry_beside_its_exact_figures(tmp_path: Path) -> None:
    db = _db(tmp_path)
    doc = orjson.loads(_run("tree", SID, "--db", str(db), "--json"))
    tm = doc["telemetry"]
    assert (tm["events"], tm["matched"], tm["disagreements"], tm["otel_only"], tm["errors"]) == (4, 3, 1, 1, 2)
    assert tm["disagreeing"] == [
        {
            "occurred_at": tm["disagreeing"][0]["occurred_at"],
            "message_id": "msg_1",
            "matched_by": "request_id",
            "mismatch": "output 41 != 40",
        }
    ]
    # the auxiliary call only the telemetry shows: its tokens are in the session's cost, once
    assert tm["otel_only_usage"]["billed_messages"] == 1 and tm["otel_only_usage"]["totals"]["output"] == 3
    assert doc["session"]["billed_messages"] == 4
    assert Decimal(doc["session"]["cost_usd"]) > Decimal(tm["otel_only_usage"]["cost_usd"]) > 0
    # each failed call attributed to its agent where the event names one
    assert tm["errors_by_agent"] == {SID: 1, AGENT: 1}
    assert [(e["agent_id"], e["error"]) for e in tm["api_errors"]] == [
        (AGENT, "Request timed out"),
        (SID, "529 Overloaded"),
    ]
    text = _run("tree", SID, "--db", str(db))
    assert "Claude Code's telemetry: 4 API requests  3 matched to transcript messages (1 disagree)" in text
    assert "disagrees: msg_1 output 41 != 40" in text
    assert "API errors (telemetry): 2" in text and "529 Overloaded" in text


def test_a_session_without_telemetry_says_none(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    conn = new_db(db)
    apply_batch(conn, transcript())
    conn.close()
    assert orjson.loads(_run("tree", SID, "--db", str(db), "--json"))["telemetry"] is None
    assert "telemetry" not in _run("tree", SID, "--db", str(db))
