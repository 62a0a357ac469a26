"""Claude Code's own figures beside ingestd's: the ``cost-state`` totals and the status line's
estimate in ``tree`` (terminal and JSON), the read API and ``status``; a disagreement is shown and
counted, never added.

From the session a real Claude Code 2.1.332 wrote (``fixtures/claude-2.1.332/projects``: its
cost-state equals ingestd's totals) and that version's last cost-state of a run of 455 agents
(``fixtures/claude-2.1.332/cost-state-455-agents.jsonl``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.store.connection import connect

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "claude-2.1.332"
SID = "f062db45-0619-43b9-910c-e628426ea014"
MODEL = "claude-sonnet-4-5-20250929"


def _run(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def _ingest(tmp_path: Path, projects: Path) -> Path:
    db = tmp_path / "t.db"
    _run("ingest", "--db", str(db), "--projects", str(projects))
    return db


def _tree(db: Path, sid: str = SID) -> dict[str, Any]:
    return dict(json.loads(_run("tree", sid, "--db", str(db), "--json"))["claude_code"])


def test_the_sample_sessions_cost_state_agrees_and_is_shown_beside_ingestds(tmp_path: Path) -> None:
    db = _ingest(tmp_path, FIXTURES / "projects")
    cc = _tree(db)
    st = cc["cost_state"]
    assert st["tokens_agree"] is True and st["cost_agrees"] is True
    assert (st["cost_usd"], st["ingestd_cost_usd"]) == (0.013155, "0.013155")
    (m,) = st["models"]
    assert m["claude_code"] == {**{k: v for k, v in m["ingestd"].items() if k != "cost_usd"}, "cost_usd": 0.013155}
    assert m["ingestd"]["input"] == 2400 and m["differs"] == []
    assert cc["status_line"] is None
    text = _run("tree", SID, "--db", str(db))
    assert "Claude Code's own totals (cost-state): $0.013155  tokens agree, cost agrees" in text
    # never added: the session's cost is ingestd's alone
    assert json.loads(_run("tree", SID, "--db", str(db), "--json"))["session"]["cost_usd"] == "0.013155"
    status = json.loads(_run("status", "--db", str(db), "--json", "--no-stat"))
    assert status["claude_totals"] == {"sessions": 1, "tokens_differ": 0, "cost_differs": 0}
    assert "Claude Code's own totals differ" not in _run("status", "--db", str(db), "--no-stat")


def test_a_disagreement_is_shown_per_model_and_counted(tmp_path: Path) -> None:
    db = _ingest(tmp_path, FIXTURES / "projects")
    conn = connect(db)
    conn.execute("UPDATE cc_model_usage SET input_tokens = 2000, cost_usd = 0.01")
    conn.execute("UPDATE sessions SET cc_cost_usd = 0.5")
    conn.execute(
        "INSERT INTO rate_limit_samples (raw_event_id, session_id, sampled_at, cc_cost_usd)"
        " VALUES (999, ?, '2026-12-01T22:25:00.000Z', 0.0131)",
        (SID,),
    )
    conn.close()
    cc = _tree(db)
    st = cc["cost_state"]
    assert st["tokens_agree"] is False and st["cost_agrees"] is False
    assert st["models"][0]["differs"] == ["input"]
    assert cc["status_line"] == {"cost_usd": 0.0131, "sampled_at": "2026-12-01T22:25:00.000Z"}
    text = _run("tree", SID, "--db", str(db), "--tz", "UTC")
    assert "TOKENS DIFFER, COST DIFFERS" in text
    assert f"{MODEL} input: Claude Code 2.0k, ingestd 2.4k" in text
    assert "Claude Code's status line: $0.0131 (its estimate," in text
    status = json.loads(_run("status", "--db", str(db), "--json", "--no-stat"))
    assert status["claude_totals"] == {"sessions": 1, "tokens_differ": 1, "cost_differs": 1}
    assert "Claude Code's own totals differ from ingestd's in 1 of 1 session" in _run("status", "--db", str(db))


def _message(sid: str, n: int, output: int) -> dict[str, Any]:
    return {
        "type": "assistant",
        "sessionId": sid,
        "uuid": f"u{n}",
        "timestamp": f"2026-12-01T22:{20 + n // 1000:02d}:{n % 1000 * 60 // 1000:02d}.{n % 1000:03d}Z",
        "message": {
            "id": f"msg_{n:04d}",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "text", "text": "done"}],
            "usage": {
                "input_tokens": 1200,
                "output_tokens": output,
                "cache_read_input_tokens": 5000,
                "cache_creation_input_tokens": 300,
                "cache_creation": {"ephemeral_5m_input_tokens": 300, "ephemeral_1h_input_tokens": 0},
            },
        },
    }


def test_a_run_of_455_agents_equals_its_cost_state(tmp_path: Path) -> None:
    """Claude Code 2.1.332's last cost-state of that run against the run's 1,816 billed messages as
    the stand-in API answered them (input 1,200, cache read 5,000, cache write 300; output 40 for a
    tool call, 7 for text: 908 of each make its 42,676). The run's own transcripts are not kept
    (ingestd's totals over them equalled these). Claude Code's float sum 11.944739999999921 agrees
    with the exact 11.94474."""
    state = json.loads((FIXTURES / "cost-state-455-agents.jsonl").read_text())
    sid = state["sessionId"]
    lines = [json.dumps(_message(sid, n, 40 if n % 2 else 7)) for n in range(1816)]
    folder = tmp_path / "projects" / "-home-user-proj"
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_text("\n".join([*lines, json.dumps(state)]) + "\n")
    st = _tree(_ingest(tmp_path, tmp_path / "projects"), sid)["cost_state"]
    assert st["cost_usd"] == 11.944739999999921 and st["ingestd_cost_usd"] == "11.94474"
    assert st["tokens_agree"] is True and st["cost_agrees"] is True
    assert st["models"][0]["ingestd"]["output"] == 42676


def test_a_database_without_a_cost_state_says_none(tmp_path: Path) -> None:
    src = tmp_path / "projects"
    shutil.copytree(FIXTURES / "projects", src)
    f = next(src.rglob("*.jsonl"))
    f.write_text("".join(ln for ln in f.read_text().splitlines(keepends=True) if '"cost-state"' not in ln))
    db = _ingest(tmp_path, src)
    assert _tree(db) == {"cost_state": None, "status_line": None}
    assert "cost-state" not in _run("tree", SID, "--db", str(db))
    assert json.loads(_run("status", "--db", str(db), "--json", "--no-stat"))["claude_totals"]["sessions"] == 0
