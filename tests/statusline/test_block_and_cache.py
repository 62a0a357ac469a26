"""The status line's 5-hour block (cost so far, burn rate, end: the same figures as ``ingestd blocks``)
and the prompt cache (warm for how long, or cold and what a rebuild would write)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from rich.console import Console

from ingestd.cli import cli
from ingestd.report.blocks import blocks_report
from ingestd.report.blocksview import render_blocks
from ingestd.report.statusline import input_facts, line_facts, render, usd
from ingestd.report.window import Window, resolve_zone
from ingestd.store.connection import connect
from tests.statusline.documented import REAL, documented

UTC_ZONE = resolve_zone("UTC", {})
SID = "cccccccc-0000-4000-8000-000000000001"


def _usage(n: int, at: datetime, model: str = "claude-sonnet-4-5-20250929") -> bytes:
    message = {
        "id": f"m{n}",
        "model": model,
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 100_000, "output_tokens": 0},  # $0.30 at $3 / MTok
    }
    rec = {"type": "assistant", "uuid": f"u{n}", "sessionId": SID, "cwd": "/w", "requestId": f"r{n}"}
    return orjson.dumps({**rec, "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "message": message}) + b"\n"


def test_the_line_shows_the_running_block_as_blocks_reports_it(tmp_path: Path) -> None:
    now = datetime(2026, 3, 2, 16, 5, tzinfo=UTC)
    root = tmp_path / "projects" / "-w"
    root.mkdir(parents=True)
    (root / f"{SID}.jsonl").write_bytes(_usage(0, now - timedelta(minutes=50)) + _usage(1, now - timedelta(minutes=5)))
    db = tmp_path / "b.db"
    assert CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(tmp_path / "projects")]).exit_code == 0
    conn = connect(db, readonly=True)
    active = blocks_report(conn, now=now, zone=UTC_ZONE, window=Window(None, None))["active"]
    assert (active["start"], active["end"], active["cost_usd"]) == (
        "2026-03-02T15:00:00.000Z",
        "2026-03-02T20:00:00.000Z",
        "0.6",
    )
    facts = line_facts(conn, {**documented(now.timestamp()), "session_id": SID}, now, UTC_ZONE)
    line = render(facts, fields=("block",), color=False, now=now, zone=UTC_ZONE)
    # $0.60 over the 50 minutes since the 15:15 slot of the first message: $0.72/h
    assert Decimal(active["burn_usd_per_hour"]) == Decimal("0.72")
    assert line == f"block $0.60 {usd(Decimal('0.72'))}/h →20:00" == "block $0.60 $0.72/h →20:00"
    later = now + timedelta(hours=4)  # past the block's end: no block runs
    assert render(
        line_facts(conn, None, later, UTC_ZONE), fields=("block",), color=False, now=later, zone=UTC_ZONE
    ) == ("ingestd")


def test_a_block_with_unpriced_usage_marks_its_burn_rate_and_projection_as_its_cost(tmp_path: Path) -> None:
    now = datetime(2026, 3, 2, 16, 5, tzinfo=UTC)
    root = tmp_path / "projects" / "-w"
    root.mkdir(parents=True)
    first, second = _usage(0, now - timedelta(minutes=50)), _usage(1, now - timedelta(minutes=5), "claude-nonesuch-9")
    (root / f"{SID}.jsonl").write_bytes(first + second)
    db = tmp_path / "b.db"
    assert CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(tmp_path / "projects")]).exit_code == 0
    conn = connect(db, readonly=True)
    active = blocks_report(conn, now=now, zone=UTC_ZONE, window=Window(None, None))["active"]
    assert (active["cost_usd"], active["cost_complete"]) == ("0.3", False)
    facts = line_facts(conn, {**documented(now.timestamp()), "session_id": SID}, now, UTC_ZONE)
    line = render(facts, fields=("block",), color=False, now=now, zone=UTC_ZONE)
    assert line.startswith("block $0.30+ $0.36+/h →20:00"), line
    doc = blocks_report(conn, now=now, zone=UTC_ZONE, window=Window(None, None), active_only=True)
    console = Console(width=200, record=True)
    render_blocks(console, doc, UTC_ZONE)
    shown = console.export_text()
    assert "active: $0.30+? so far, $0.36+?/h, projected $" in shown
    assert shown.split("projected ", 1)[1].split(" at ", 1)[0].endswith("+?"), shown


def _cache(**over: Any) -> dict[str, Any]:
    real = json.loads(REAL[-1].read_text())["prompt_cache"]
    return {**real, **over}


NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("cache", "shown"),
    [
        (_cache(warm=True, expires_at=NOW.timestamp() + 250), "cache 4m"),
        (_cache(warm=True, expires_at=NOW.timestamp() + 42), "cache 42s"),
        (_cache(warm=True, expires_at=NOW.timestamp() - 1), "cache cold (rebuild 6.5k)"),  # expired since
        (_cache(warm=False, recache_tokens_if_cold=1_250_000), "cache cold (rebuild 1.2M)"),
        (_cache(warm=False, recache_tokens_if_cold=None), "cache cold"),
        (_cache(warm=True, expires_at="soon"), "cache"),  # an unsound time is left out
        (_cache(warm="yes"), "ingestd"),  # not a prompt_cache block: nothing shown
        (None, "ingestd"),
    ],
)
def test_the_prompt_cache_says_how_long_it_stays_warm_or_what_a_cold_start_writes(cache: Any, shown: str) -> None:
    obj = {"session_id": SID, "prompt_cache": cache}
    assert render(input_facts(obj, NOW), fields=("cache",), color=False, now=NOW, zone=UTC_ZONE) == shown


def test_every_real_input_shows_its_cache() -> None:
    real = [obj for obj in (json.loads(p.read_text()) for p in REAL) if "prompt_cache" in obj]
    assert real
    for obj in real:
        at = datetime.fromtimestamp(obj["prompt_cache"]["expires_at"] - 200, UTC)
        line = render(input_facts(obj, at), color=False, now=at, zone=UTC_ZONE)
        assert line.endswith(" · cache 3m"), line
