"""Budgets: the caps' arithmetic, and the decision a real daemon answers to a real hook delivery."""

from __future__ import annotations

import http.client
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.core.budget import Caps, Spend, Verdict, answer, judge
from tests.reliability.daemon import Daemon
from tests.support import wait_for

D = Decimal


def test_soft_caps_warn_and_hard_caps_block_at_or_over_the_figure() -> None:
    caps = Caps(daily_soft=D("5"), daily_hard=D("10"), session_soft=D("2"), five_hour_pct_hard=90.0)
    assert judge(caps, Spend(D("4.99"), D("4.99"), D("1.99"), 89.9)) == Verdict()
    v = judge(caps, Spend(D("5.00"), D("5"), D("2"), None))
    assert v.block is None and [w.split(":")[1].split(" reached")[0] for w in v.warnings] == [
        " today's spend $5.00",
        " this session's spend $2.00",
    ]
    v = judge(caps, Spend(D("10.004"), D("10"), None, None))
    assert v.block is not None and "today's spend $10.00 reached the hard cap $10.00 (budget_daily_hard_usd)" in v.block
    assert "INGESTD_BUDGET_DAILY_HARD_USD" in v.block and v.warnings == ()
    v = judge(caps, Spend(D("1"), D("1"), D("0"), 90.0))
    assert v.block is not None and "5-hour limit used 90% reached the hard cap 90%" in v.block


def test_an_unsure_figure_never_blocks_it_warns_and_says_why() -> None:
    caps = Caps(weekly_hard=D("1"))
    v = judge(caps, Spend(D("0"), D("3"), None, None, unsure="usage without a price (claude-x) is not in the figure"))
    assert v.block is None
    assert v.warnings == (
        "ingestd budget: this week's spend $3.00 reached the hard cap $1.00 (budget_weekly_hard_usd); "
        "not blocked, because usage without a price (claude-x) is not in the figure",
    )


def test_the_answers_are_claude_codes_documented_shapes() -> None:
    block = Verdict(("soft",), "hard")
    out = {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "hard"}
    assert answer(block, "PreToolUse") == {"hookSpecificOutput": out, "systemMessage": "hard; soft"}
    assert answer(block, "UserPromptSubmit") == {"decision": "block", "reason": "hard", "systemMessage": "hard; soft"}
    assert answer(Verdict(("a", "b")), "UserPromptSubmit") == {"systemMessage": "a; b"}
    assert answer(Verdict(), "PreToolUse") is None and answer(block, "PostToolUse") is None


def usage_line(sid: str, n: int, model: str, at: datetime, input_tokens: int) -> bytes:
    return orjson.dumps({
        "type": "assistant", "uuid": f"u{n}", "sessionId": sid, "cwd": "/w", "requestId": f"req_{n}",
        "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "message": {"id": f"msg_{n}", "model": model, "role": "assistant", "content": [{"type": "text", "text": "ok"}],
                    "usage": {"input_tokens": input_tokens, "output_tokens": 1}},
    }) + b"\n"  # fmt: skip


def post(port: int, body: dict[str, Any]) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("POST", "/hooks", body=orjson.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def test_a_real_daemon_warns_blocks_and_stays_silent_by_the_caps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$3.00 spent today (ten messages of 100,000 input tokens of Sonnet 4.5 at $3 / MTok, each under
    its 200,000-token long-context threshold): the soft cap $1 warns,
    the hard cap $2.50 denies the tool call and blocks the prompt, with the reason; the deliveries are
    in the log all the same."""
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("INGESTD_BUDGET_DAILY_SOFT_USD", "1")
    monkeypatch.setenv("INGESTD_BUDGET_DAILY_HARD_USD", "2.5")
    d = Daemon.in_dir(tmp_path)
    sid = "aaaaaaaa-0000-4000-8000-000000000001"
    proj = d.root / "-w"
    proj.mkdir()
    at = datetime.now(UTC) - timedelta(minutes=1)
    lines = [usage_line(sid, n, "claude-sonnet-4-5-20250929", at, 100_000) for n in range(10)]
    (proj / f"{sid}.jsonl").write_bytes(b"".join(lines))
    d.start()
    try:
        hook = {"session_id": sid, "cwd": "/w", "transcript_path": "/x"}
        wait_for("the usage read", lambda: b"permissionDecision" in post(
            d.port, {**hook, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t0",
                     "tool_input": {"command": "ls"}})[1])  # fmt: skip
        status, body = post(d.port, {**hook, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                                      "tool_use_id": "t1", "tool_input": {"command": "ls"}})  # fmt: skip
        doc = orjson.loads(body)
        assert status == 200
        out = doc["hookSpecificOutput"]
        assert (out["hookEventName"], out["permissionDecision"]) == ("PreToolUse", "deny")
        assert (
            "today's spend $3.00 reached the hard cap $2.50 (budget_daily_hard_usd)" in out["permissionDecisionReason"]
        )
        status, body = post(d.port, {**hook, "hook_event_name": "UserPromptSubmit", "prompt": "go on"})
        doc = orjson.loads(body)
        assert status == 200 and doc["decision"] == "block" and "$2.50" in doc["reason"]
        status, body = post(
            d.port, {**hook, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t1"}
        )
        assert (status, body) == (200, b"")
    finally:
        d.stop()
    from click.testing import CliRunner

    from ingestd.cli import cli

    r = CliRunner().invoke(cli, ["status", "--db", str(d.db), "--json", "--no-stat"])
    assert orjson.loads(r.stdout)["rows"]["events"] >= 4  # every delivery is in the log, blocked or not


def test_unpriced_usage_today_warns_instead_of_blocking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("INGESTD_BUDGET_DAILY_HARD_USD", "2.5")
    d = Daemon.in_dir(tmp_path)
    sid = "aaaaaaaa-0000-4000-8000-000000000002"
    proj = d.root / "-w"
    proj.mkdir()
    at = datetime.now(UTC) - timedelta(minutes=1)
    (proj / f"{sid}.jsonl").write_bytes(
        usage_line(sid, 1, "claude-sonnet-4-5-20250929", at, 1_000_000) + usage_line(sid, 2, "claude-mystery-9", at, 10)
    )
    d.start()
    try:
        hook = {"session_id": sid, "cwd": "/w", "hook_event_name": "UserPromptSubmit", "prompt": "go"}
        body = wait_for("the warning", lambda: post(d.port, hook)[1] or None)
        doc = orjson.loads(body)
        assert set(doc) == {"systemMessage"}
        assert "not blocked, because usage without a price (claude-mystery-9)" in doc["systemMessage"]
    finally:
        d.stop()


def test_without_caps_every_answer_is_the_empty_200(tmp_path: Path) -> None:
    d = Daemon.in_dir(tmp_path)
    d.start()
    try:
        hook = {
            "session_id": "s",
            "cwd": "/w",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_use_id": "t",
        }
        assert post(d.port, hook) == (200, b"")
    finally:
        d.stop()


async def test_only_the_events_a_budget_can_stop_are_checked(
    aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With caps on, a PostToolUse (or any event the answer cannot stop) never costs a check."""
    from ingestd.daemon.config import ServeConfig
    from ingestd.daemon.root import assemble
    from ingestd.report.budget import BudgetCheck
    from ingestd.settings import resolve
    from tests.hookclient import JSON_HEADERS

    seen: list[str] = []
    monkeypatch.setattr(BudgetCheck, "__call__", lambda self, event, sid: seen.append(event))
    settings = resolve({}, {"INGESTD_BUDGET_DAILY_HARD_USD": "1"}, {})
    cfg = ServeConfig(
        db_path=tmp_path / "b.db", tail=False, schedule=False, watchdog_interval_s=3600, settings=settings
    )
    client = await aiohttp_client(assemble(cfg), headers=JSON_HEADERS)
    for event in ("PostToolUse", "Stop", "PreToolUse", "UserPromptSubmit"):
        body = {"hook_event_name": event, "session_id": "s", "cwd": "/w", "tool_use_id": "t", "tool_name": "Bash"}
        resp = await client.post("/hooks", data=orjson.dumps(body))
        assert resp.status == 200 and await resp.read() == b""
    assert seen == ["PreToolUse", "UserPromptSubmit"]
