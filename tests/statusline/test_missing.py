"""``ingestd blocks`` and the status line say what their cost leaves out (count and reason), never a
complete-looking figure alone (SPEC §5.2, §15).

The records are a real corpus line (``tests.stores.corpus_records``) with a field added as the
public sources describe it: a ``usage.speed`` no price row has a multiplier for (unpriced, reason
``speed:turbo``), and a ``usage.iterations`` entry of a type ingestd cannot bill (the record is
quarantined ``tokens``: uncounted).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.ingest.backfill import ingest_roots
from ingestd.report.blocks import active_block, blocks_report
from ingestd.report.statusline import line_facts, render
from ingestd.report.window import Window, resolve_zone
from tests.ingest.support import new_db
from tests.statusline.documented import documented
from tests.stores.corpus_records import OPUS_46_COST, opus_46_record

SID = "491e126e-1e71-469c-ade2-fcc8af567c74"
UTC_ZONE = resolve_zone("UTC", {})
NOW = datetime(2026, 2, 10, 22, 30, tzinfo=UTC)  # 34 minutes after the record
MYSTERY = {"type": "mystery_message", "input_tokens": 50, "output_tokens": 5}


def _records() -> list[dict[str, Any]]:
    fast = opus_46_record(speed="turbo")  # a speed no row prices
    odd = opus_46_record(iterations=[MYSTERY])  # an iteration ingestd cannot bill
    odd["message"]["id"] = "msg_0179FgGtJzf3MkRAWS4a4tbF"
    odd["requestId"] = "req_011CY18jHAewmXYczL1WUztH"
    odd["uuid"] = "5a870ee3-92dd-48a0-9e23-b50e820810af"
    return [fast, odd]


def _db(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    path = root / "-home-user-projects-spotter" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in _records()))
    db = tmp_path / "x.db"
    ingest_roots(new_db(db), [root], now="2026-02-10T22:00:00.000Z")
    return db


def test_the_running_block_is_not_complete_and_says_what_it_leaves_out(tmp_path: Path) -> None:
    conn = new_db(_db(tmp_path))
    doc = blocks_report(conn, now=NOW, zone=UTC_ZONE, window=Window(None, None))
    active = doc["active"]
    # the executor calls priced: only the second record's ($0.0368765); the turbo one is unpriced
    assert Decimal(active["cost_usd"]) == Decimal(OPUS_46_COST)
    assert active["cost_complete"] is False
    # 1 + 472 + 34,903 + 762 = 36,138 tokens at a speed no row prices
    assert active["unpriced"] == {"claude-opus-4-6": {"tokens": 36_138, "messages": 1, "reasons": ["speed:turbo"]}}
    assert active["uncounted"]["records"] == 1 and "mystery_message" in active["uncounted"]["reasons"][0]
    assert doc["uncounted"] == active["uncounted"] and doc["unread"]["bytes"] == 0
    assert active_block(conn, now=NOW, zone=UTC_ZONE) == active
    res = CliRunner().invoke(cli, ["blocks", "--db", str(tmp_path / "x.db"), "--tz", "UTC"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "+? unpriced: claude-opus-4-6: 36.1k tokens in 1 message (speed 'turbo' has no multiplier" in text
    assert "+? not counted: 1 record with usage no bucket holds (usage.iterations[0] has type" in text


def test_the_status_line_says_what_its_costs_leave_out(tmp_path: Path) -> None:
    conn = new_db(_db(tmp_path))
    facts = line_facts(conn, {**documented(NOW.timestamp()), "session_id": SID}, NOW, UTC_ZONE)
    line = render(facts, fields=("session", "block"), color=False, now=NOW, zone=UTC_ZONE)
    note = (
        "+? 36.1k tok unpriced (claude-opus-4-6: speed:turbo); 1 record not counted: usage.iterations[0] has type"
        " 'mystery_message': its 55…"
    )
    assert line.startswith("session $0.04+ (CC $1.23) · " + note)
    assert line.count("+? ") == 1  # the session's and the block's leave out the same: said once
    assert " · block $0.04+ " in line
