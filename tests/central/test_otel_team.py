"""Claude Code's telemetry in team mode: its log rows shipped like every other, projected centrally
into the same otel_requests, otel_metric_points and usage rows (with their host), replayed equal."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import psycopg

from ingestd.central.check import replay
from ingestd.central.pg import PgReadConn
from ingestd.central.pg import connect as pg_connect
from ingestd.report.cost import cost_report
from ingestd.report.window import make_window, resolve_zone
from ingestd.store.writer import apply_batch
from tests.central.support import local_db, project, ship_all
from tests.otlp.test_reconcile import telemetry, transcript

ZONE = resolve_zone("UTC", {})
COLUMNS = "session_id, request_key, event, message_id, matched_by, usage_id, agrees, mismatch"


def test_telemetry_reaches_the_central_store_reconciled(tmp_path: Path, pg_url: str) -> None:
    local = local_db(tmp_path / "a.db", [], "host-a")
    apply_batch(local, telemetry())  # usage of its own until the transcript arrives
    apply_batch(local, transcript())
    mine = sorted(tuple(r) for r in local.execute(f"SELECT {COLUMNS} FROM otel_requests"))
    usage = sorted(tuple(r) for r in local.execute("SELECT message_id, input, output FROM token_usage"))
    assert len(mine) == 4 and len(usage) == 4
    ship_all(local, pg_url)
    project(pg_url)
    with psycopg.connect(pg_url) as c:
        central = sorted(c.execute(f"SELECT {COLUMNS}, host_id FROM otel_requests").fetchall())
        central_usage = sorted(c.execute("SELECT message_id, input, output FROM token_usage").fetchall())
        points = c.execute("SELECT name, value, host_id FROM otel_metric_points").fetchall()
    assert [r[:-1] for r in central] == mine and {r[-1] for r in central} == {"host-a"}
    assert central_usage == usage
    assert points == [("claude_code.cost.usage", 0.0191, "host-a")]
    pg = pg_connect(pg_url)
    try:
        outcome = replay(pg)
        assert outcome.ok and outcome.live["otel_requests"][0] == 4
    finally:
        pg.close()


def test_cost_by_source_on_the_central_store_is_the_local_document(tmp_path: Path, pg_url: str) -> None:
    local = local_db(tmp_path / "a.db", [], "host-a")
    apply_batch(local, telemetry())
    ship_all(local, pg_url)
    project(pg_url)
    window = make_window(None, None, ZONE, datetime(2030, 1, 1, tzinfo=UTC))
    mine = cost_report(local, by="source", window=window, zone=ZONE)
    pg = pg_connect(pg_url, autocommit=True)
    try:
        central = cost_report(PgReadConn(pg), by="source", window=window, zone=ZONE)
    finally:
        pg.close()
    assert [r["source"] for r in mine["rows"]] == ["otel"] and mine["telemetry"]["otel_only"] == 4
    assert central["telemetry"] == mine["telemetry"]
    assert central == mine


def test_the_sessions_telemetry_in_the_central_tree_is_the_local_one(tmp_path: Path, pg_url: str) -> None:
    from ingestd.report.tree import tree_report
    from tests.otlp.test_reconcile import SID
    from tests.otlp.test_session_telemetry import api_errors

    local = local_db(tmp_path / "a.db", [], "host-a")
    apply_batch(local, transcript() + telemetry() + api_errors())
    mine = tree_report(local, SID)["telemetry"]
    assert mine is not None and (mine["matched"], mine["otel_only"], mine["errors"]) == (3, 1, 2)
    ship_all(local, pg_url)
    project(pg_url)
    pg = pg_connect(pg_url, autocommit=True)
    try:
        assert tree_report(PgReadConn(pg), SID)["telemetry"] == mine
    finally:
        pg.close()


def test_telemetrys_compactions_and_agent_ends_are_folded_centrally_alike(tmp_path: Path, pg_url: str) -> None:
    from tests.otlp.test_otel_folds import as_new_rows

    local = local_db(tmp_path / "a.db", [], "host-a")
    rows = as_new_rows()
    ship_all(local, pg_url)
    for r in rows:  # shipped and projected row by row: the telemetry's own compaction row comes and goes
        apply_batch(local, [r])
        ship_all(local, pg_url)
        project(pg_url)
    mine = sorted(
        tuple(r) for r in local.execute("SELECT session_id, boundary_id, agent_id, pre_tokens FROM compactions")
    )
    agents = sorted(tuple(r) for r in local.execute("SELECT session_id, id, status FROM agents"))
    assert len(mine) == 2
    with psycopg.connect(pg_url) as c:
        assert (
            sorted(c.execute("SELECT session_id, boundary_id, agent_id, pre_tokens FROM compactions").fetchall())
            == mine
        )
        assert sorted(c.execute("SELECT session_id, id, status FROM agents").fetchall()) == agents
    pg = pg_connect(pg_url)
    try:
        assert replay(pg).ok
    finally:
        pg.close()
