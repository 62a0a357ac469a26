"""The watchdog's reference time is capped at the clock: a receipt time read while the clock was
ahead does not make every new session ``unknown``; ``status`` and ``ingest`` say a clock was wrong."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core import hookkeys
from ingestd.core.watchdog import reference_time, watchdog_row
from ingestd.http.hooks import hook_row
from ingestd.report.status import status_report
from ingestd.store.connection import connect
from ingestd.store.watchdog_pass import clock_bound
from ingestd.store.writer import apply_batch

FUTURE_NS = int(datetime(2099, 6, 1, tzinfo=UTC).timestamp() * 1e9)


def _hook(sid: str, name: str, received_ns: int) -> object:
    body = orjson.dumps({"session_id": sid, "hook_event_name": name, "cwd": "/p", "transcript_path": "/p/x.jsonl"})
    parsed = hookkeys.parse_body(body)
    assert isinstance(parsed, hookkeys.HookEvent)
    key = hookkeys.idempotency_key(parsed, header_key=None, received_ns=received_ns, instance="i", counter=1)
    return hook_row(parsed, body, key, received_ns)


def test_reference_time_caps_the_newest_time_at_the_clock() -> None:
    now = "2026-12-01T00:00:00.000Z"
    assert reference_time("2026-11-30T00:00:00.000Z", "", "", now) == "2026-11-30T00:00:00.000Z"
    assert reference_time("2099-01-01T00:00:00.000Z", "2026-11-30T10:00:00.000Z", "2026-11-30T09:00:00.000Z", now) == (
        "2026-11-30T10:00:00.000Z"
    )
    assert reference_time("2099-01-01T00:00:00.000Z", "", "2026-11-30T09:00:00.000Z", now) == "2026-11-30T09:00:00.000Z"
    assert reference_time("2099-01-01T00:00:00.000Z", "2099-01-01T00:00:00.000Z", "", now) == ""


def test_clock_bound_is_the_next_whole_second() -> None:
    ns = int(datetime(2026, 12, 1, 10, 0, 5, 250000, tzinfo=UTC).timestamp() * 1e9)
    assert clock_bound(ns) == "2026-12-01T10:00:06.000Z"


def test_a_receipt_time_in_the_future_does_not_make_new_sessions_unknown(db_path: Path) -> None:
    conn = connect(db_path)
    apply_batch(conn, [watchdog_row(FUTURE_NS, 600)])  # logged while the clock read 2099
    now_ns = time.time_ns()
    apply_batch(conn, [_hook("s-new", "SessionStart", now_ns)])  # type: ignore[list-item]
    apply_batch(conn, [_hook("s-new", "UserPromptSubmit", now_ns + 1000)])  # type: ignore[list-item]
    assert conn.execute("SELECT status FROM sessions WHERE id = 's-new'").fetchall() == [("working",)]
    # an old session is still found idle at the capped time
    apply_batch(conn, [_hook("s-old", "UserPromptSubmit", now_ns - 3600 * 10**9)])  # type: ignore[list-item]
    apply_batch(conn, [_hook("s-new", "PreToolUse", now_ns + 2000)])  # type: ignore[list-item]
    assert conn.execute("SELECT status FROM sessions WHERE id = 's-old'").fetchall() == [("unknown",)]
    res = CliRunner().invoke(cli, ["replay", "--db", str(db_path)])
    assert res.exit_code == 0, res.output  # the rebuild caps at the clock too


def test_status_warns_of_receipt_times_in_the_future(db_path: Path) -> None:
    conn = connect(db_path)
    assert status_report(conn, now=datetime.now(UTC))["watchdog"]["future_receipts_until"] is None
    apply_batch(conn, [watchdog_row(FUTURE_NS, 600)])
    doc = status_report(conn, now=datetime.now(UTC))
    assert doc["watchdog"]["future_receipts_until"] == "2099-06-01T00:00:00.000Z"
    res = CliRunner().invoke(cli, ["status", "--db", str(db_path), "--no-stat"])
    assert res.exit_code == 0, res.output
    assert "2099-06-01T00:00:00.000Z, after now" in " ".join(res.output.split())


def test_ingest_and_status_say_record_times_were_refused_as_in_the_future(tmp_path: Path, db_path: Path) -> None:
    proj = tmp_path / "p" / "-proj"
    proj.mkdir(parents=True)
    line = {
        "type": "user",
        "sessionId": "66666666-6666-4666-8666-666666666666",
        "uuid": "u1",
        "timestamp": "2099-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hi"},
    }
    (proj / "66666666-6666-4666-8666-666666666666.jsonl").write_text(json.dumps(line) + "\n")
    res = CliRunner().invoke(cli, ["ingest", "--projects", str(tmp_path / "p"), "--db", str(db_path)])
    assert res.exit_code == 0, res.output
    assert "1 record time refused as more than a day after the line was read" in " ".join(res.stderr.split())
    doc = status_report(connect(db_path), now=datetime.now(UTC))
    assert doc["watchdog"]["refused_future_timestamps"] == 1
