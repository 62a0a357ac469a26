"""5-hour blocks (hand-computed), cost by ISO week and month, and two-level groupings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.cli import cli
from ingestd.report.blocks import active_block, blocks_report
from ingestd.report.window import Window, resolve_zone
from ingestd.store.connection import connect
from tests.conftest import CORPUS

PROJECTS = CORPUS / "claude-projects"
needs_corpus = pytest.mark.skipif(not PROJECTS.is_dir(), reason=f"real corpus not found at {PROJECTS}")
UTC_ZONE = resolve_zone("UTC", {})
SID = "bbbbbbbb-0000-4000-8000-000000000001"


def run(*args: str) -> Any:
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 0, r.output
    return orjson.loads(r.stdout) if "--json" in args else r.output


def line(n: int, at: str, input_tokens: int = 100_000) -> bytes:
    message = {
        "id": f"m{n}",
        "model": "claude-sonnet-4-5-20250929",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": input_tokens, "output_tokens": 0},
    }
    rec = {"type": "assistant", "uuid": f"u{n}", "sessionId": SID, "cwd": "/w", "requestId": f"r{n}", "timestamp": at}
    return orjson.dumps({**rec, "message": message}) + b"\n"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Four messages of $0.30 each (100,000 input tokens of Sonnet 4.5 at $3 / MTok)."""
    root = tmp_path / "projects" / "-w"
    root.mkdir(parents=True)
    times = [f"2026-03-02T{hm}:00.000Z" for hm in ("10:10", "12:00", "15:05", "23:00")]
    (root / f"{SID}.jsonl").write_bytes(b"".join(line(i, t) for i, t in enumerate(times)))
    path = tmp_path / "b.db"
    run("ingest", "--db", str(path), "--projects", str(tmp_path / "projects"))
    return path


def spans(doc: dict[str, Any]) -> list[tuple[str, str, bool, str, int]]:
    return [
        (b["start"][11:16], b["end"][11:16], b["official"], b["cost_usd"], b["billed_messages"]) for b in doc["blocks"]
    ]


def test_a_block_starts_at_the_hour_of_its_first_activity_and_lasts_five_hours(db: Path) -> None:
    # 10:10 opens 10:00-15:00 (12:00 inside it); 15:05 is past its end: 15:00-20:00; 23:00: 23:00-04:00
    conn = connect(db, readonly=True)
    doc = blocks_report(conn, now=datetime(2026, 3, 4, tzinfo=UTC), zone=UTC_ZONE, window=Window(None, None))
    assert spans(doc) == [
        ("10:00", "15:00", False, "0.6", 2),
        ("15:00", "20:00", False, "0.3", 1),
        ("23:00", "04:00", False, "0.3", 1),
    ]
    assert doc["active"] is None
    day = run("cost", "--db", str(db), "--by", "day", "--tz", "UTC", "--json")
    assert sum(Decimal(b["cost_usd"]) for b in doc["blocks"]) == Decimal(day["rows"][0]["cost_usd"]) == Decimal("1.2")


def test_official_reset_times_align_the_blocks(db: Path) -> None:
    conn = connect(db)
    conn.execute(
        "INSERT INTO rate_limit_samples (raw_event_id, session_id, sampled_at, five_hour_pct, five_hour_resets_at)"
        " VALUES (999999, ?, '2026-03-02T10:11:00.000Z', 12.0, '2026-03-02T14:30:00.000Z')",
        (SID,),
    )
    doc = blocks_report(conn, now=datetime(2026, 3, 4, tzinfo=UTC), zone=UTC_ZONE, window=Window(None, None))
    # 10:10 and 12:00 in the official 09:30-14:30; 15:05 opens 15:00-20:00
    assert spans(doc)[:2] == [("09:30", "14:30", True, "0.6", 2), ("15:00", "20:00", False, "0.3", 1)]


def test_the_active_block_has_its_burn_rate_and_projection(db: Path) -> None:
    conn = connect(db, readonly=True)
    now = datetime(2026, 3, 2, 16, 5, tzinfo=UTC)  # an hour after 15:05's slot began (15:00)
    doc = blocks_report(conn, now=now, zone=UTC_ZONE, window=Window(None, None), active_only=True)
    (a,) = doc["blocks"]
    assert a["active"] and a == doc["active"]
    # $0.30 over the 65 minutes since 15:00: $0.276923/h; 235 minutes left: 0.30 + 0.276923 * 235/60
    assert Decimal(a["burn_usd_per_hour"]) == Decimal("0.276923")
    projected = Decimal("0.3") + Decimal("0.3") / Decimal(65 / 60) * Decimal(235 / 60)
    assert Decimal(a["projected_cost_usd"]) == projected.quantize(Decimal("0.000001"))
    assert a["remaining_minutes"] == 235


@needs_corpus
def test_on_the_real_corpus_the_blocks_sum_to_the_total_and_every_day(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    run("ingest", "--db", str(db), "--projects", str(PROJECTS))
    blocks = run("blocks", "--db", str(db), "--tz", "UTC", "--json")["blocks"]
    total = run("cost", "--db", str(db), "--json")
    assert sum(Decimal(b["cost_usd"]) for b in blocks) == Decimal(total["cost_usd"])
    assert sum(b["tokens"] for b in blocks) == total["tokens"]
    for b in blocks:
        assert b["end"] > b["start"] and b["first_activity"] >= b["start"] and b["last_activity"] <= b["end"]
    days = run("cost", "--db", str(db), "--by", "day", "--tz", "UTC", "--json")["rows"]
    by_day = {r["day"]: Decimal(r["cost_usd"]) for r in days}
    within: dict[str, Decimal] = {}
    for b in blocks:
        if b["start"][:10] == b["last_activity"][:10]:
            within[b["start"][:10]] = within.get(b["start"][:10], Decimal(0)) + Decimal(b["cost_usd"])
    crossing = {b["start"][:10] for b in blocks if b["start"][:10] != b["last_activity"][:10]}
    for day, cost in within.items():
        if day not in crossing:
            assert cost == by_day[day], day


@needs_corpus
def test_weeks_months_and_two_levels_add_up_to_the_total(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    run("ingest", "--db", str(db), "--projects", str(PROJECTS))
    total = run("cost", "--db", str(db), "--json")
    days = run("cost", "--db", str(db), "--by", "day", "--tz", "UTC", "--json")["rows"]
    for by in ("week", "month", "day,model", "model,month"):
        rows = run("cost", "--db", str(db), "--by", by, "--tz", "UTC", "--json")["rows"]
        assert sum(Decimal(r["cost_usd"]) for r in rows) == Decimal(total["cost_usd"]), by
        assert sum(r["tokens"] for r in rows) == total["tokens"], by
    months = run("cost", "--db", str(db), "--by", "month", "--tz", "UTC", "--json")["rows"]
    for m in months:
        assert Decimal(m["cost_usd"]) == sum(Decimal(d["cost_usd"]) for d in days if d["day"][:7] == m["month"])
    weeks = run("cost", "--db", str(db), "--by", "week", "--tz", "UTC", "--json")["rows"]
    assert all(len(w["week"]) == 8 and w["week"][4:6] == "-W" for w in weeks)
    repeated = run("cost", "--db", str(db), "--by", "day", "--by", "model", "--tz", "UTC", "--json")
    joined = run("cost", "--db", str(db), "--by", "day,model", "--tz", "UTC", "--json")
    assert repeated["by"] == "day,model" and repeated == joined
    assert all(set(r) >= {"day", "model"} for r in repeated["rows"])


def test_an_iso_week_starts_on_monday_in_the_local_zone(db: Path) -> None:
    # 2026-03-02 is a Monday: 23:00 UTC is already Tuesday in Tokyo, still week 10; Sunday 2026-03-01
    # 23:00 in Los Angeles is Monday 07:00 UTC
    rows = run("cost", "--db", str(db), "--by", "week", "--tz", "Asia/Tokyo", "--json")["rows"]
    assert [(r["week"], r["billed_messages"]) for r in rows] == [("2026-W10", 4)]
    r = CliRunner().invoke(cli, ["cost", "--db", str(db), "--by", "agent,day"])
    assert r.exit_code == 2 and "agent alone" in r.output


def _db_of(tmp_path: Path, times: list[str]) -> Path:
    root = tmp_path / "projects" / "-w"
    root.mkdir(parents=True)
    (root / f"{SID}.jsonl").write_bytes(b"".join(line(i, t) for i, t in enumerate(times)))
    path = tmp_path / "b.db"
    run("ingest", "--db", str(path), "--projects", str(tmp_path / "projects"))
    return path


def test_the_active_block_is_decided_by_history_past_a_day_when_activity_never_paused(tmp_path: Path) -> None:
    # every 4 hours from 03-01 00:10: blocks 00-05, 08-13, 16-21, 00-05, 08-13 (08:10 on 03-02)
    times = [f"2026-03-0{1 + h // 24}T{h % 24:02d}:10:00.000Z" for h in range(0, 33, 4)]
    conn = connect(_db_of(tmp_path, times), readonly=True)
    now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    truth = blocks_report(conn, now=now, zone=UTC_ZONE, window=Window(None, None))["active"]
    assert truth is not None and (truth["start"], truth["end"]) == (
        "2026-03-02T08:00:00.000Z",
        "2026-03-02T13:00:00.000Z",
    )
    # the last day alone starts its chain at 03-01 12:10 and ends a block at 09:00: no block now
    day = blocks_report(conn, now=now, zone=UTC_ZONE, window=Window(datetime(2026, 3, 1, 9, tzinfo=UTC), None))
    assert day["active"] is None
    assert active_block(conn, now=now, zone=UTC_ZONE) == truth


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    gaps=st.lists(st.integers(min_value=1, max_value=7 * 4), min_size=1, max_size=30),  # quarter hours apart
    later=st.integers(min_value=0, max_value=6 * 4),
)
def test_the_active_block_equals_the_one_all_history_gives(tmp_path_factory: Any, gaps: list[int], later: int) -> None:
    t = datetime(2026, 3, 1, 0, 5, tzinfo=UTC)
    times = []
    for g in gaps:
        t += timedelta(minutes=15 * g)
        times.append(t.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    conn = connect(_db_of(tmp_path_factory.mktemp("blocks"), times), readonly=True)
    now = t + timedelta(minutes=15 * later)
    truth = blocks_report(conn, now=now, zone=UTC_ZONE, window=Window(None, None))["active"]
    assert active_block(conn, now=now, zone=UTC_ZONE) == truth
