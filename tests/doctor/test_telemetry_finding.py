"""doctor's telemetry check: whether Claude Code's own OTLP exports reach the daemon."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ingestd.claude.doctor import ACTION, NOTE, OK, SettingsFile, TelemetryLog, telemetry_finding, telemetry_log
from ingestd.core import otlp
from ingestd.store.writer import apply_batch
from tests.ingest.support import new_db
from tests.otlp.bodies import event_attrs, json_logs, json_record

BASE = "http://127.0.0.1:7391"
ON = {
    "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
    "OTEL_LOGS_EXPORTER": "otlp",
    "OTEL_EXPORTER_OTLP_ENDPOINT": BASE,
}


def files(env: dict[str, Any] | None) -> list[SettingsFile]:
    return [SettingsFile(Path("settings.json"), {"env": env} if env is not None else {})]


def test_off_is_fine_and_says_how_to_turn_it_on() -> None:
    f = telemetry_finding(files(None), BASE, TelemetryLog())
    assert f.level == OK and "off" in f.message and f.fix == "ingestd hooks install --otel"


def test_on_but_nothing_arrived_yet_is_a_note() -> None:
    f = telemetry_finding(files(ON), BASE, TelemetryLog())
    assert f.level == NOTE and "no export has reached the daemon yet" in f.message


def test_exports_that_arrived_are_ok() -> None:
    f = telemetry_finding(files(ON), BASE, TelemetryLog(3, "2026-12-01T00:00:00.000Z", 1))
    assert f.level == OK and "3 exports" in f.message and "1 retention sweeps" in f.message


def test_an_endpoint_elsewhere_than_the_daemon_needs_action_once_exports_were_coming() -> None:
    env = {**ON, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9999"}
    f = telemetry_finding(files(env), BASE, TelemetryLog(2, "2026-12-01T00:00:00.000Z"))
    assert f.level == ACTION and "9999" in f.message


def test_the_log_is_read_through_the_key_range(tmp_path: Path) -> None:
    conn = new_db(tmp_path / "t.db")
    assert telemetry_log(conn) == TelemetryLog()
    body = json_logs([json_record(event_attrs("retention_sweep", seq=1))])
    parsed = otlp.parse_request(otlp.LOGS, orjson.loads(body), body)
    assert isinstance(parsed, otlp.Export)
    apply_batch(conn, parsed.rows_at("2026-12-01T00:00:00.000Z"))
    assert telemetry_log(conn) == TelemetryLog(1, "2026-12-01T00:00:00.000Z", 1)
