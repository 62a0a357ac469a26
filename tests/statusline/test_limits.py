"""``ingestd limits``: official numbers from the latest sample, estimates from the sound samples of
the same window, flagged samples shown and never estimated from, the cost cross-check."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core import statusline as sl
from ingestd.daemon.hookwriter import store_rows
from ingestd.http.statusline import snapshot_row
from ingestd.ingest.backfill import ingest_roots
from ingestd.report.cost import cost_report
from ingestd.report.limits import limits_lines, limits_report
from ingestd.report.window import Window, resolve_zone
from ingestd.store.connection import Db, connect
from ingestd.store.migrate import migrate
from tests.statusline.documented import REPO, documented

ZONE = resolve_zone("UTC", {})
T0 = datetime(2026, 12, 1, tzinfo=UTC).timestamp()


def log(conn: Db, at_s: float, five: dict[str, Any], seven: dict[str, Any] | None = None, **over: Any) -> None:
    limits = {"five_hour": five, **({"seven_day": seven} if seven is not None else {})}
    snap = sl.parse_input(orjson.dumps(documented(at_s, rate_limits=limits, **over)))
    assert isinstance(snap, sl.Snapshot)
    store_rows(conn, [snapshot_row(snap, int(at_s * 1e9))])


def db(tmp_path: Path) -> Db:
    conn = connect(tmp_path / "ingestd.db")
    migrate(conn)
    return conn


def test_official_figures_and_the_estimated_burn(tmp_path: Path) -> None:
    conn = db(tmp_path)
    reset = T0 + 4 * 3600
    for dt, pct in ((0, 10), (3600, 20), (5400, 25)):
        log(conn, T0 + dt, {"used_percentage": pct, "resets_at": reset}, cost={"total_cost_usd": 0.5 + pct})
    now = datetime.fromtimestamp(T0 + 5400 + 60, tz=UTC)
    doc = limits_report(conn, now=now, zone=ZONE, history=True)
    five = doc["windows"]["five_hour"]
    assert five["official"] == {"used_percentage": 25.0, "resets_at": "2026-12-01T04:00:00.000Z", "flag": None}
    assert five["sample_age_s"] == 60.0
    est = five["estimated"]
    assert est["burn_pct_per_hour"] == 10.0 and est["samples"] == 3  # (25 - 10) % over 1.5 h
    assert est["full_at"] == "2026-12-01T09:00:00.000Z" and est["full_before_reset"] is False  # 75 % more: 7.5 h
    assert [h["used_percentage"] for h in five["history"]] == [10.0, 20.0, 25.0]
    assert doc["windows"]["seven_day"] is None
    lines = limits_lines(doc, ZONE)
    assert lines[0].startswith("5-hour: 25% used (official), resets Tue 2026-12-01 04:00; sampled 60 s ago")
    assert (
        "burn 10%/h (estimated from 3 samples); 100% at Tue 2026-12-01 09:00 at that rate (after the reset)" in lines[1]
    )


def test_a_new_window_starts_the_estimate_again_and_a_flagged_sample_estimates_nothing(tmp_path: Path) -> None:
    conn = db(tmp_path)
    log(conn, T0, {"used_percentage": 90, "resets_at": T0 + 600})
    log(conn, T0 + 1200, {"used_percentage": 5, "resets_at": T0 + 1200 + 5 * 3600})
    log(conn, T0 + 2400, {"used_percentage": 15, "resets_at": T0 + 1200 + 5 * 3600})
    now = datetime.fromtimestamp(T0 + 2400, tz=UTC)
    est = limits_report(conn, now=now, zone=ZONE)["windows"]["five_hour"]["estimated"]
    assert (est["burn_pct_per_hour"], est["samples"], est["full_before_reset"]) == (30.0, 2, True)
    log(conn, T0 + 3000, {"used_percentage": 16, "resets_at": T0 - 86400})  # a reset in the past
    five = limits_report(conn, now=now + timedelta(minutes=10), zone=ZONE)["windows"]["five_hour"]
    assert five["official"]["flag"] == sl.RESET_PAST and five["estimated"]["burn_pct_per_hour"] is None
    assert (
        "[flagged: reset_past]"
        in limits_lines({"samples": 4, "windows": {"five_hour": five, "seven_day": None}, "cost_check": None}, ZONE)[0]
    )


def test_a_fall_within_one_window_is_never_a_negative_burn(tmp_path: Path) -> None:
    # two accounts' status lines in one database: the same reset, percentages that go down and up again
    conn = db(tmp_path)
    reset = T0 + 4 * 3600
    for dt, pct in ((0, 60), (1800, 70), (3600, 20), (5400, 35)):
        log(conn, T0 + dt, {"used_percentage": pct, "resets_at": reset})
    now = datetime.fromtimestamp(T0 + 5400, tz=UTC)
    doc = limits_report(conn, now=now, zone=ZONE)
    est = doc["windows"]["five_hour"]["estimated"]
    assert (est["burn_pct_per_hour"], est["samples"], est["since"]) == (30.0, 2, "2026-12-01T01:00:00.000Z")
    assert est["fell_at"] == "2026-12-01T01:00:00.000Z"
    assert any("fell before Tue 2026-12-01 01:00" in line for line in limits_lines(doc, ZONE))
    log(conn, T0 + 6000, {"used_percentage": 10, "resets_at": reset})  # falls again: one sample left
    est = limits_report(conn, now=now, zone=ZONE)["windows"]["five_hour"]["estimated"]
    assert (est["burn_pct_per_hour"], est["samples"], est["full_at"]) == (None, 1, None)
    assert est["fell_at"] == "2026-12-01T01:40:00.000Z"


def test_claude_codes_estimate_beside_the_exact_cost(tmp_path: Path) -> None:
    conn = db(tmp_path)
    projects = REPO / "fixtures" / "projects"
    ingest_roots(conn, [projects], now="2026-12-01T00:00:00.000Z")
    sid = str(
        conn.execute(
            "SELECT session_id FROM token_usage GROUP BY 1"
            " ORDER BY sum(input + output + cache_read + cache_write_5m + cache_write_1h) DESC"
        ).fetchall()[0][0]
    )
    log(conn, T0, {"used_percentage": 1, "resets_at": T0 + 60}, session_id=sid, cost={"total_cost_usd": 0.25})
    doc = limits_report(conn, now=datetime.fromtimestamp(T0, tz=UTC), zone=ZONE)
    exact = cost_report(conn, by=None, window=Window(None, None), zone=ZONE, session=sid)["cost_usd"]
    assert Decimal(exact) > 0
    assert doc["cost_check"] == {
        "session_id": sid,
        "sampled_at": doc["cost_check"]["sampled_at"],
        "claude_code_usd": 0.25,
        "ingestd_usd": exact,
        "ingestd_complete": True,
    }


def test_the_command(tmp_path: Path) -> None:
    conn = db(tmp_path)
    path = tmp_path / "ingestd.db"
    empty = CliRunner().invoke(cli, ["limits", "--db", str(path)])
    assert empty.exit_code == 0 and empty.output.startswith("no status-line samples yet")
    log(conn, T0, {"used_percentage": 12.5, "resets_at": T0 + 3600}, {"used_percentage": 3, "resets_at": T0 + 86400})
    conn.close()
    r = CliRunner().invoke(cli, ["limits", "--db", str(path), "--json", "--history"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["samples"] == 1 and doc["windows"]["seven_day"]["official"]["used_percentage"] == 3.0
    human = CliRunner().invoke(cli, ["limits", "--db", str(path), "--tz", "UTC"])
    assert "5-hour: 12.5% used (official)" in human.output and "7-day: 3% used (official)" in human.output
