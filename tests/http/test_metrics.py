"""``GET /metrics``: the Prometheus text format, parsed with ``prometheus_client.parser``, whose totals
equal ``ingestd cost --json``; 503 mid-migration; no session ids in labels; the Grafana dashboard's
queries name only families the exposition has."""

from __future__ import annotations

import json
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import apsw
import pytest
from aiohttp import web
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from ingestd.cli import cli
from ingestd.http.api import add_api_routes

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "docs" / "grafana" / "ingestd.json"


def ingest(db: Path, root: Path) -> None:
    r = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output


def cost_json(db: Path, *args: str) -> Any:
    r = CliRunner().invoke(cli, ["cost", "--db", str(db), "--json", "--tz", "UTC", *args], catch_exceptions=False)
    return json.loads(r.stdout)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    ingest(path, REPO / "fixtures" / "projects")
    return path


async def scrape(aiohttp_client: Any, db: Path) -> tuple[int, str, str]:
    app = web.Application()
    add_api_routes(app, db_path=db)
    client = await aiohttp_client(app)
    resp = await client.get("/metrics")
    return resp.status, resp.headers["Content-Type"], await resp.text()


def samples(text: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for fam in text_string_to_metric_families(text):
        out.setdefault(fam.name, []).extend(fam.samples)
    return out


def check_totals(text: str, db: Path) -> None:
    got = samples(text)
    want = cost_json(db)
    buckets: dict[str, float] = {}
    for s in got["ingestd_tokens"]:
        if s.name == "ingestd_tokens_total":
            buckets[s.labels["bucket"]] = buckets.get(s.labels["bucket"], 0) + s.value
    assert buckets == {b: float(n) for b, n in want["totals"].items()}
    cost = sum(Decimal(repr(s.value)) for s in got["ingestd_cost_usd"] if s.name == "ingestd_cost_usd_total")
    assert abs(cost - Decimal(want["cost_usd"])) < Decimal("0.000001")
    pcost = sum(Decimal(repr(s.value)) for s in got["ingestd_project_cost_usd"] if s.name.endswith("_total"))
    assert abs(pcost - Decimal(want["cost_usd"])) < Decimal("0.000001")
    messages = sum(s.value for s in got["ingestd_billed_messages"] if s.name.endswith("_total"))
    assert messages == want["billed_messages"]


async def test_the_exposition_parses_and_its_totals_equal_cost_json(aiohttp_client: Any, db: Path) -> None:
    status, ctype, text = await scrape(aiohttp_client, db)
    assert status == 200
    assert ctype.startswith("text/plain; version=0.0.4")
    check_totals(text, db)
    got = samples(text)
    sessions = json.loads(CliRunner().invoke(cli, ["sessions", "--db", str(db), "--json"]).stdout)
    assert sum(s.value for s in got["ingestd_sessions"]) == sessions["count"]
    assert sum(s.value for s in got["ingestd_log_rows"] if s.name.endswith("_total")) > 0


async def test_no_label_carries_a_session_id(aiohttp_client: Any, db: Path) -> None:
    _, _, text = await scrape(aiohttp_client, db)
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    ids = {str(r[0]) for r in conn.execute("SELECT id FROM sessions")}
    conn.close()
    assert ids
    labels = {v for fam in text_string_to_metric_families(text) for s in fam.samples for v in s.labels.values()}
    assert labels & ids == set()
    assert not any(re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-", v) for v in labels)


async def test_mid_migration_answers_503_with_the_reason(aiohttp_client: Any, db: Path) -> None:
    conn = apsw.Connection(str(db))
    last = conn.execute("SELECT max(id) FROM schema_version").fetchall()[0][0]
    conn.execute("DROP TRIGGER IF EXISTS schema_version_no_delete")
    conn.execute("DELETE FROM schema_version WHERE id = ?", (last,))
    conn.close()
    status, _, text = await scrape(aiohttp_client, db)
    assert status == 503
    assert "migrations pending" in json.loads(text)["error"]["message"]


@pytest.mark.corpus
async def test_the_real_corpus_totals_equal_cost_json(aiohttp_client: Any, corpus: Path, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    shutil.copytree(corpus / "claude-projects", root)
    db = tmp_path / "c.db"
    ingest(db, root)
    status, _, text = await scrape(aiohttp_client, db)
    assert status == 200
    check_totals(text, db)


async def test_the_grafana_dashboard_queries_only_families_the_exposition_has(aiohttp_client: Any, db: Path) -> None:
    _, _, text = await scrape(aiohttp_client, db)
    families = list(text_string_to_metric_families(text))
    names = {fam.name for fam in families} | {f"{fam.name}_total" for fam in families if fam.type == "counter"}
    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    assert exprs
    used = {m for e in exprs for m in re.findall(r"\bingestd_[a-z_]+", e)}
    assert used <= names, used - names


async def test_the_plan_limits_are_the_newest_official_samples(aiohttp_client: Any, db: Path) -> None:
    from datetime import UTC, datetime

    from ingestd.store.connection import connect
    from tests.statusline.test_limits import log

    status, _, text = await scrape(aiohttp_client, db)
    assert status == 200 and "ingestd_plan_limit_used_percent{" not in text, "no sample, no series"
    conn = connect(db)
    t0 = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
    reset = t0 + 4 * 3600
    log(conn, t0, {"used_percentage": 10, "resets_at": reset}, {"used_percentage": 3, "resets_at": t0 + 86400})
    log(conn, t0 + 600, {"used_percentage": 25, "resets_at": reset})
    conn.close()
    status, _, text = await scrape(aiohttp_client, db)
    got = samples(text)
    used = {s.labels["window"]: s.value for s in got["ingestd_plan_limit_used_percent"]}
    assert used == {"five_hour": 25.0, "seven_day": 3.0}
    resets = {s.labels["window"]: s.value for s in got["ingestd_plan_limit_resets_at_timestamp_seconds"]}
    assert resets == {"five_hour": reset, "seven_day": t0 + 86400}
    sampled = {s.labels["window"]: s.value for s in got["ingestd_plan_limit_sampled_at_timestamp_seconds"]}
    assert sampled == {"five_hour": t0 + 600, "seven_day": t0}
