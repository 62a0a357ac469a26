"""The read API answers with the same documents as the CLI (fixture database of tests/report)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.http.api import OPENAPI_PATH, add_api_routes

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
    ("/api/cost?by=project&tz=UTC&since=2025-03-09&until=2025-03-09",
     ["cost", "--by", "project", "--tz", "UTC", "--since", "2025-03-09", "--until", "2025-03-09"]),
]  # fmt: skip


@pytest.mark.parametrize(("url", "args"), SAME)
async def test_api_equals_cli(client: Any, db: Path, url: str, args: list[str]) -> None:
    resp = await client.get(url)
    assert resp.status == 200
    assert resp.content_type == "application/json"
    assert await resp.json() == cli_json(db, *args)


async def test_cost_golden_over_http(client: Any) -> None:
    resp = await client.get("/api/cost?by=day&tz=America/New_York")
    report_fixture.check_golden("cost_day_new_york", await resp.json())


async def test_health_and_status(client: Any) -> None:
    resp = await client.get("/api/health")
    doc = await resp.json()
    assert resp.status == 200 and doc["status"] == "ok" and doc["schema_version"] == 5
    resp = await client.get("/api/status")
    doc = await resp.json()
    assert doc["unpriced"] == {"claude-mystery-9": {"tokens": 330, "messages": 2}}
    assert doc["rows"]["sessions"] == 3


@pytest.mark.parametrize(
    ("url", "status", "code"),
    [
        ("/api/sessions/b22/tree", 400, "ambiguous"),
        ("/api/sessions/zzz/tree", 404, "not_found"),
        ("/api/cost?by=week", 400, "bad_parameter"),
        ("/api/cost?tz=Mars/Olympus", 400, "bad_parameter"),
        ("/api/cost?since=yesterday", 400, "bad_parameter"),
        ("/api/sessions?limit=0", 400, "bad_parameter"),
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
    assert {"/api/health", "/api/sessions", "/api/sessions/{id}/tree", "/api/cost"} <= set(doc["paths"])
