"""Budgets through a real Claude Code 2.1.332: with today's spend over a hard cap, the daemon's answer
to the UserPromptSubmit hook that ``hooks install`` wired makes Claude Code stop the prompt before it
reaches the model, naming the cap; with only a soft cap the same prompt goes through. Either way the
delivery is in the log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import apsw
import pytest

from tests.budget.test_budget import usage_line
from tests.realclaude import standin as s
from tests.realclaude.claude import Claude
from tests.reliability.daemon import Daemon
from tests.support import free_port, wait_for

SEED = "bbbbbbbb-0000-4000-8000-000000000001"


def _ingestd(env: dict[str, str], db: Path, *args: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "ingestd", *args, "--db", str(db)], env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def _spent(env: dict[str, str], db: Path) -> Decimal:
    return Decimal(json.loads(_ingestd(env, db, "cost", "--json"))["cost_usd"])


def _prompts_logged(db: Path, sid: str) -> int:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        sql = (
            "SELECT count(*) FROM events_raw"
            " WHERE source = 'hook' AND event_type = 'UserPromptSubmit' AND session_id = ?"
        )
        return int(conn.execute(sql, (sid,)).fetchone()[0])
    finally:
        conn.close()


def test_a_hard_cap_stops_a_real_prompt_and_a_soft_cap_lets_it_through(
    claude_code: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Today: ten messages of 100,000 Sonnet 4.5 input tokens at $3 / MTok = $3.00 (and one output
    token each, $0.00015), over the hard cap $2.50 and the soft cap $1."""
    monkeypatch.setenv("TZ", "UTC")
    with s.StandIn() as api:
        claude = Claude(claude_code, tmp_path / "claude", api.url)
        home = claude.home()
        projects = home / ".claude" / "projects"
        (projects / "-w").mkdir(parents=True)
        at = datetime.now(UTC) - timedelta(minutes=1)
        seed = b"".join(usage_line(SEED, n, "claude-sonnet-4-5-20250929", at, 100_000) for n in range(10))
        (projects / "-w" / f"{SEED}.jsonl").write_bytes(seed)
        env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
        db = tmp_path / "ingestd.db"
        port = free_port()

        monkeypatch.setenv("INGESTD_BUDGET_DAILY_SOFT_USD", "1")
        monkeypatch.setenv("INGESTD_BUDGET_DAILY_HARD_USD", "2.5")
        daemon = Daemon(db, projects, port, tmp_path / "serve.log")
        daemon.start()
        try:
            wait_for("the seed priced", lambda: _spent(env, db) == Decimal("3.00015"))
            _ingestd(env, db, "hooks", "install", "--port", str(port))
            api.script = s.script(s.conversation("BUDGET-HARD", s.text("Should never be asked.")))
            run = claude.run("BUDGET-HARD hello")
            assert api.messages("BUDGET-HARD") == []  # stopped before the model
            said = run.stdout + run.stderr
            assert "today's spend $3.00 reached the hard cap $2.50 (budget_daily_hard_usd)" in said, said
            assert run.session_id is not None
            assert wait_for("the blocked prompt logged", lambda: _prompts_logged(db, str(run.session_id)) == 1)
        finally:
            daemon.stop()

        monkeypatch.delenv("INGESTD_BUDGET_DAILY_HARD_USD")
        daemon = Daemon(db, projects, port, tmp_path / "serve2.log")
        daemon.start()
        try:
            api.script = s.script(s.conversation("BUDGET-SOFT", s.text("Answered.")))
            run = claude.run("BUDGET-SOFT hello").check()
            assert len(api.messages("BUDGET-SOFT")) >= 1 and "Answered." in run.stdout
            assert run.session_id is not None
            assert wait_for("the warned prompt logged", lambda: _prompts_logged(db, str(run.session_id)) == 1)
        finally:
            daemon.stop()
