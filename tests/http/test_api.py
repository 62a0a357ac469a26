"""The read API answers with the same documents as the CLI (fixture database of tests/report)."""

from __future__ import annotations

import importlib.util
import re
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core.ledger import PINS
from ingestd.http.api import OPENAPI_PATH, add_api_routes
from ingestd.report.sessions import STATUSES
from ingestd.report.timeline import timeline_report
from ingestd.store.connection import connect

_spec = importlib.util.spec_from_file_location(
    "report_fixture", Path(__file__).resolve().parents[1] / "report" / "report_fixture.py"
)
assert _spec is not None and _spec.loader is not None
report_fixture = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("report_fixture", report_fixture)
_spec.loader.exec_module(report_fixture)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path: Path = report_fixture.build_fixture_db(tmp_path / "api.db")
    return path


@pytest.fixture
async def client(aiohttp_client: Any, db: Path) -> Any:
    app = web.Application()
    add_api_routes(app, db_path=db)
    return await aiohttp_client(app)


def cli_json(db: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--db", str(db), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return orjson.loads(result.stdout)


SAME = [
    ("/api/sessions", ["sessions"]),
    ("/api/sessions?project=code/alpha&limit=1", ["sessions", "--project", "code/alpha", "--limit", "1"]),
    ("/api/sessions?since=2025-11-01&until=2025-11-03&tz=UTC",
     ["sessions", "--since", "2025-11-01", "--until", "2025-11-03", "--tz", "UTC"]),
    ("/api/sessions/a1/tree", ["tree", "a1"]),
    ("/api/sessions/b2222222-2222-4222-8222-222222222222/tree", ["tree", "b2222222-2222-4222-8222-222222222222"]),
    ("/api/cost?tz=UTC", ["cost", "--tz", "UTC"]),
    ("/api/cost?by=day&tz=America/New_York", ["cost", "--by", "day", "--tz", "America/New_York"]),
    ("/api/cost?by=model&tz=UTC", ["cost", "--by", "model", "--tz", "UTC"]),
    ("/api/cost?by=agent&tz=UTC", ["cost", "--by", "agent", "--tz", "UTC"]),
    ("/api/cost?by=source&tz=UTC", ["cost", "--by", "source", "--tz", "UTC"]),
    ("/api/cost?by=project&tz=UTC&since=2025-03-09&until=2025-03-09",
     ["cost", "--by", "project", "--tz", "UTC", "--since", "2025-03-09", "--until", "2025-03-09"]),
]  # fmt: skip


@pytest.mark.parametrize(("url", "args"), SAME)
async def test_api_equals_cli(client: Any, db: Path, url: str, args: list[str]) -> None:
    """Each read endpoint answers the JSON document the CLI's ``--json`` prints for the same question."""
    resp = await client.get(url)
    assert resp.status == 200
    assert resp.content_type == "application/json"
    assert await resp.json() == cli_json(db, *args)


async def test_cost_golden_over_http(client: Any) -> None:
    resp = await client.get("/api/cost?by=day&tz=America/New_York")
    report_fixture.check_golden("cost_day_new_york", await resp.json())


async def test_health_and_status(client: Any) -> None:
    """``/api/health`` is 200 with the schema version on a healthy database; ``/api/status`` carries the
    unpriced part and row counts."""
    resp = await client.get("/api/health")
    doc = await resp.json()
    assert resp.status == 200 and doc["status"] == "ok" and doc["schema_version"] == PINS[-1].id
    resp = await client.get("/api/status")
    doc = await resp.json()
    assert doc["unpriced"] == {
        "claude-mystery-9": {"tokens": 330, "messages": 2, "web_search_requests": 0, "reasons": ["no_rate"]}
    }
    assert doc["rows"]["sessions"] == 3


@pytest.mark.parametrize(
    ("url", "status", "code"),
    [
        ("/api/sessions/b22/tree", 400, "ambiguous"),
        ("/api/sessions/zzz/tree", 404, "not_found"),
        ("/api/cost?by=fortnight", 400, "bad_parameter"),
        ("/api/cost?by=day,model,host", 400, "bad_parameter"),
        ("/api/cost?tz=Mars/Olympus", 400, "bad_parameter"),
        ("/api/cost?since=tomorrow", 400, "bad_parameter"),
        ("/api/sessions?limit=0", 400, "bad_parameter"),
        ("/api/sessions?limit=1_0", 400, "bad_parameter"),  # int() took it as 10
        ("/api/sessions?limit=%EF%BC%91", 400, "bad_parameter"),  # a fullwidth 1
        # past the calendar's end: a 400 naming the parameter, never a 500 (found by a fresh-eyes pass)
        ("/api/cost?since=0001-01-01&until=9999-12-31", 400, "bad_parameter"),
        ("/api/sessions?until=9999-12-31", 400, "bad_parameter"),
        ("/api/cost?since=999999999h", 400, "bad_parameter"),
    ],
)
async def test_errors_have_the_one_shape(client: Any, url: str, status: int, code: str) -> None:
    resp = await client.get(url)
    assert resp.status == status
    doc = await resp.json()
    assert set(doc) == {"error"} and doc["error"]["status"] == status and doc["error"]["code"] == code
    assert doc["error"]["message"]


async def test_missing_database_is_503(aiohttp_client: Any, tmp_path: Path) -> None:
    app = web.Application()
    add_api_routes(app, db_path=tmp_path / "absent.db")
    client = await aiohttp_client(app)
    resp = await client.get("/api/health")
    assert resp.status == 503
    assert (await resp.json())["error"]["code"] == "database_unavailable"
    assert not (tmp_path / "absent.db").exists()


async def test_openapi_is_served_and_lists_the_routes(client: Any) -> None:
    resp = await client.get("/api/openapi.json")
    doc = await resp.json()
    assert doc == orjson.loads(OPENAPI_PATH.read_bytes())
    assert {
        "/api/health", "/api/sessions", "/api/sessions/{id}/tree", "/api/sessions/{id}/timeline", "/api/cost",
        "/api/status", "/api/live", "/",
    } <= set(doc["paths"])  # fmt: skip


@pytest.mark.parametrize("given", ["a1", "a1111111-1111-4111-8111-111111111111"])
async def test_session_prefixes_resolve_like_the_cli(client: Any, db: Path, given: str) -> None:
    resp = await client.get(f"/api/sessions/{given}/tree")
    assert resp.status == 200, await resp.text()
    doc = await resp.json()
    assert doc["session"]["session_id"] == "a1111111-1111-4111-8111-111111111111"
    assert doc == cli_json(db, "tree", given)


@pytest.mark.parametrize("given", ["A1", "%20a1", "a1%20", "%20A1%20", "A1111111-1111-4111-8111-111111111111", "%20"])
async def test_a_session_id_is_exact_never_trimmed_or_case_folded(client: Any, db: Path, given: str) -> None:
    # an id with spaces around it opened the session it was trimmed to
    resp = await client.get(f"/api/sessions/{given}/tree")
    assert resp.status == 404, await resp.text()
    assert "no session id starts with" in (await resp.json())["error"]["message"]
    result = CliRunner().invoke(cli, ["tree", given.replace("%20", " "), "--db", str(db)])
    assert result.exit_code == 2 and "no session id starts with" in result.stderr


@pytest.mark.parametrize(
    ("url", "names"),
    [
        ("/api/cost?since=2025-03-10&until=2025-03-01&tz=UTC", ("since (", "until (")),
        ("/api/sessions?since=tomorrow", ("since:",)),
        ("/api/cost?until=soon", ("until:",)),
        ("/api/sessions?limit=0", ("limit",)),
    ],
)
async def test_api_errors_name_query_parameters_not_cli_flags(client: Any, url: str, names: tuple[str, ...]) -> None:
    resp = await client.get(url)
    assert resp.status == 400
    message = (await resp.json())["error"]["message"]
    assert "--" not in message
    assert all(n in message for n in names)


async def test_timeline_lists_tool_calls_per_agent_with_durations(client: Any, db: Path) -> None:
    resp = await client.get("/api/sessions/a1/timeline")
    assert resp.status == 200
    doc = await resp.json()
    conn = connect(db, readonly=True)
    try:
        assert doc == timeline_report(conn, "a1")  # the page's numbers come from the report function
    finally:
        conn.close()
    main = "a1111111-1111-4111-8111-111111111111"
    assert doc["session_id"] == main
    assert doc["agents"] == [main, "a-explore-1", "a-general-2"]  # main first, then by first call
    calls = {c["tool_use_id"]: c for c in doc["tool_calls"]}
    assert [c["tool_use_id"] for c in doc["tool_calls"]] == [
        "toolu_00", "toolu_01", "toolu_03", "toolu_04", "toolu_05", "toolu_02", "toolu_06"
    ]  # fmt: skip
    assert calls["toolu_00"]["duration_ms"] == 1000
    assert calls["toolu_01"]["duration_ms"] == (20 * 60 + 1) * 1000  # 07:19:59 -> 07:40:00
    assert calls["toolu_02"] | {} == {
        "tool_use_id": "toolu_02", "agent_id": main, "tool_name": "Bash", "status": "failed",
        "started_at": "2025-03-09T08:00:00.000Z", "ended_at": "2025-03-09T08:00:03.000Z", "duration_ms": 3000,
        "input_summary": None, "input": None, "result": None,  # the fixture's projections have no log rows
    }  # fmt: skip
    assert calls["toolu_06"]["status"] == "interrupted" and calls["toolu_06"]["duration_ms"] is None
    assert doc["compactions"] == []


async def test_timeline_marks_compactions(client: Any, db: Path) -> None:
    conn = connect(db)
    try:
        conn.execute(
            "INSERT INTO compactions (session_id, boundary_id, agent_id, occurred_at, trigger, pre_tokens) VALUES"
            " ('a1111111-1111-4111-8111-111111111111', 'cb-2', NULL, '2025-03-09T09:00:00.000Z', 'manual', NULL),"
            " ('a1111111-1111-4111-8111-111111111111', 'cb-1', 'a1111111-1111-4111-8111-111111111111',"
            "  '2025-03-09T06:00:00.000Z', 'auto', 155000)"
        )
    finally:
        conn.close()
    doc = await (await client.get("/api/sessions/a1/timeline")).json()
    assert doc["compactions"] == [
        {"boundary_id": "cb-1", "agent_id": "a1111111-1111-4111-8111-111111111111",
         "occurred_at": "2025-03-09T06:00:00.000Z", "trigger": "auto", "pre_tokens": 155000},
        {"boundary_id": "cb-2", "agent_id": None, "occurred_at": "2025-03-09T09:00:00.000Z",
         "trigger": "manual", "pre_tokens": None},
    ]  # fmt: skip
    assert doc["agents"][-1] is None  # a compaction with no agent gets its own lane


@pytest.mark.parametrize(("url", "status"), [("/api/sessions/zzz/timeline", 404), ("/api/sessions/b22/timeline", 400)])
async def test_timeline_resolves_sessions_like_the_tree(client: Any, url: str, status: int) -> None:
    resp = await client.get(url)
    assert resp.status == status


async def _ids(client: Any, query: str) -> tuple[list[str], int]:
    resp = await client.get(f"/api/sessions?{query}")
    assert resp.status == 200, await resp.text()
    doc = await resp.json()
    return [r["session_id"] for r in doc["rows"]], doc["matched"]


async def test_the_live_views_filters_run_over_every_session_before_the_limit(client: Any) -> None:
    # Regression: the page filtered the 200 newest rows it had fetched; the oldest session was never found
    oldest = "a1111111-1111-4111-8111-111111111111"  # the least recently active of the fixture's three
    assert await _ids(client, "limit=1") == (["b2299999-9999-4999-8999-999999999999"], 3)
    assert await _ids(client, "limit=1&search=A111") == ([oldest], 1)  # an id prefix, any case
    assert await _ids(client, "limit=1&search=the%20PARSER") == ([oldest], 1)  # a title's words, any case
    assert await _ids(client, "search=%25") == ([], 0)  # LIKE's wildcards are text
    assert await _ids(client, "search=b22_") == ([], 0)
    assert await _ids(client, "limit=1&status=completed") == ([oldest], 1)
    ids, n = await _ids(client, "project_is=/home/dev/code/alpha")
    assert n == 2 and oldest in ids
    assert await _ids(client, "project_is=/home/dev/code") == ([], 0)  # exactly the project, not a part of it
    assert await _ids(client, "project_is=/home/dev/code/alpha&status=working&search=b22") == (
        ["b2299999-9999-4999-8999-999999999999"],
        1,
    )


async def test_a_status_filter_that_no_session_can_have_is_a_400_naming_the_values(client: Any) -> None:
    resp = await client.get("/api/sessions?status=bogus")
    assert resp.status == 400
    doc = await resp.json()
    assert doc["error"]["code"] == "bad_parameter"
    assert "working, waiting, completed, error, unknown" in doc["error"]["message"]
    assert "'bogus'" in doc["error"]["message"]


def test_the_status_filter_knows_exactly_the_schemas_statuses(db: Path) -> None:
    conn = connect(db, readonly=True)
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'sessions'").fetchone()
    check = re.search(r"CHECK \(status IN \(([^)]*)\)\)", sql)
    assert check is not None
    assert tuple(v.strip().strip("'") for v in check.group(1).split(",")) == STATUSES
    params = orjson.loads(OPENAPI_PATH.read_bytes())["paths"]["/api/sessions"]["get"]["parameters"]
    assert next(p for p in params if p["name"] == "status")["schema"]["enum"] == list(STATUSES)


async def test_api_projects_lists_every_project(client: Any) -> None:
    resp = await client.get("/api/projects")
    assert resp.status == 200
    assert await resp.json() == {
        "projects": [
            {"project": "/home/dev/code/alpha", "sessions": 2},
            {"project": "/home/dev/code/beta", "sessions": 1},
        ]
    }


async def test_sessions_sort_by_cost_or_tokens_over_every_session(client: Any, db: Path) -> None:
    rows = cli_json(db, "sessions")["rows"]
    by_cost = await (await client.get("/api/sessions?sort=cost")).json()
    assert by_cost["sort"] == "cost"
    want = sorted(rows, key=lambda r: (Decimal(r["cost_usd"]), r["tokens"]), reverse=True)
    assert [r["session_id"] for r in by_cost["rows"]] == [r["session_id"] for r in want]
    assert [r["session_id"] for r in by_cost["rows"]] != [r["session_id"] for r in rows], "an order of its own"
    top = await (await client.get("/api/sessions?sort=tokens&limit=1")).json()
    assert top["matched"] == len(rows) and [r["tokens"] for r in top["rows"]] == [max(r["tokens"] for r in rows)]
    bad = await client.get("/api/sessions?sort=price")
    assert bad.status == 400 and (await bad.json())["error"]["code"] == "bad_parameter"


async def test_the_tree_by_prompt_is_the_clis_and_a_bad_grouping_is_400(client: Any, db: Path) -> None:
    resp = await client.get("/api/sessions/a1/tree", params={"by": "prompt"})
    assert resp.status == 200, await resp.text()
    doc = await resp.json()
    assert doc["by"] == "prompt" and doc == cli_json(db, "tree", "a1", "--by", "prompt")
    assert (await (await client.get("/api/sessions/a1/tree")).json())["claude_code"] == {
        "cost_state": None,
        "status_line": None,
    }
    bad = await client.get("/api/sessions/a1/tree", params={"by": "model"})
    assert bad.status == 400 and "by must be one of agent, prompt" in (await bad.json())["error"]["message"]
