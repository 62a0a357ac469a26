"""Golden JSON of every reading command on the fixture database (fixtures/reports/fixture.sql).

Regenerate only with INGESTD_REGEN_GOLDEN=1 (then review the diff).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from report_fixture import check_golden

from ingestd.cli import cli
from ingestd.core.ledger import PINS

S1 = "a1111111-1111-4111-8111-111111111111"
S2 = "b2222222-2222-4222-8222-222222222222"


def run_json(db: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--db", str(db), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return orjson.loads(result.stdout)


CASES = {
    "sessions": ["sessions"],
    "sessions_alpha_limit1": ["sessions", "--project", "code/alpha", "--limit", "1"],
    "sessions_window": ["sessions", "--since", "2025-11-01", "--until", "2025-11-03", "--tz", "UTC"],
    "tree_a1": ["tree", "a1"],
    "tree_b222": ["tree", "b222"],
    "cost": ["cost", "--tz", "UTC"],
    "cost_day_new_york": ["cost", "--by", "day", "--tz", "America/New_York"],
    "cost_day_utc": ["cost", "--by", "day", "--tz", "UTC"],
    "cost_day_tokyo": ["cost", "--by", "day", "--tz", "Asia/Tokyo"],
    "cost_model": ["cost", "--by", "model", "--tz", "UTC"],
    "cost_session": ["cost", "--by", "session", "--tz", "UTC"],
    "cost_project": ["cost", "--by", "project", "--tz", "UTC"],
    "cost_agent": ["cost", "--by", "agent", "--tz", "UTC"],
    "cost_ny_march_9": [
        "cost", "--by", "day", "--tz", "America/New_York", "--since", "2025-03-09", "--until", "2025-03-09",
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(report_db: Path, name: str) -> None:
    """Each report's JSON equals its golden file (``fixtures/reports/golden``; rewritten only with
    INGESTD_REGEN_GOLDEN=1)."""
    check_golden(name, run_json(report_db, *CASES[name]))


def test_status_golden(report_db: Path) -> None:
    from datetime import UTC, datetime

    from ingestd.report.status import status_report
    from ingestd.store.connection import connect

    doc = status_report(
        connect(report_db, readonly=True), now=datetime(2025, 11, 4, 12, tzinfo=UTC), db_path=None, stat_files=True
    )
    assert doc["database"]["size_bytes"] > 0
    doc["database"] = "<varies>"
    check_golden("status", doc)


def test_status_cli_runs(report_db: Path) -> None:
    doc = run_json(report_db, "status")
    assert doc["schema"]["version"] == PINS[-1].id
    assert doc["database"]["path"] == str(report_db)
    assert doc["unpriced"] == {
        "claude-mystery-9": {"tokens": 330, "messages": 2, "web_search_requests": 0, "reasons": ["no_rate"]}
    }


def test_status_counts_the_unshipped_log_rows(report_db: Path) -> None:
    from datetime import UTC, datetime

    from ingestd.report.status import status_report
    from ingestd.store.connection import connect

    def host() -> dict[str, Any]:
        doc = status_report(connect(report_db, readonly=True), now=datetime(2025, 11, 4, 12, tzinfo=UTC))
        return {"logged": doc["rows"]["events_raw"], **doc["host"]}

    before = host()
    assert before["unshipped_rows"] == before["logged"] > 2  # nothing shipped: the whole log
    conn = connect(report_db)
    conn.execute("INSERT INTO meta (key, value) VALUES ('shipped_through', (SELECT max(id) - 2 FROM events_raw))")
    conn.close()
    assert host()["unshipped_rows"] == 2


def test_status_speaks_of_shipping_only_in_team_mode(report_db: Path) -> None:
    # Regression: "host vm; shipped through log id 0, 8813 rows not shipped" with no ship_to and nothing shipped
    import io
    from datetime import UTC, datetime

    from rich.console import Console

    from ingestd.report.status import status_report
    from ingestd.report.statusview import render_status
    from ingestd.store.connection import connect

    def shown(ship_to: str | None) -> str:
        doc = status_report(
            connect(report_db, readonly=True), now=datetime(2025, 11, 4, 12, tzinfo=UTC), ship_to=ship_to
        )
        doc["stalls"] = []
        out = io.StringIO()
        render_status(Console(file=out, width=200), doc)
        return out.getvalue()

    assert "shipped" not in shown(None)
    assert "shipped through log id 0, 3 rows not shipped" in shown("postgresql://central/db")
    conn = connect(report_db)
    conn.execute("INSERT INTO meta (key, value) VALUES ('shipped_through', (SELECT max(id) - 2 FROM events_raw))")
    conn.close()
    assert "2 rows not shipped" in shown(None)  # shipped before: team mode, whatever the settings now
    r = CliRunner().invoke(cli, ["status", "--db", str(report_db), "--no-stat"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "2 rows not shipped" in r.output, r.output
