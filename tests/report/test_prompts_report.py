"""``tree --by prompt`` and ``GET /api/sessions/{id}/tree?by=prompt``: a session's work by the prompt
it answered. A subagent's work belongs to the prompt of its spawning call even when it runs on past
the next prompt; the main agent's to the latest prompt begun before it; work before any prompt is
``no_prompt``; the groups add up to the session.

Records shaped as Claude Code 2.1.332 writes them (``fixtures/claude-2.1.332/projects``: ``promptId``
and ``turnPosition`` on user records, none on assistant records).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.report.prompts import Placer

SID = "5e551011-0000-4000-8000-000000000001"
MODEL = "claude-sonnet-4-5-20250929"


def _t(s: int) -> str:
    return f"2026-12-01T10:00:{s:02d}.000Z"


def _user(uuid: str, s: int, pid: str, index: int, text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "sessionId": SID,
        "uuid": uuid,
        "parentUuid": None,
        "isSidechain": False,
        "promptId": pid,
        "turnPosition": {"promptIndex": index, "turnIndex": 1},
        "timestamp": _t(s),
        "message": {"role": "user", "content": text},
    }


def _assistant(mid: str, s: int, out: int, content: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "sessionId": SID,
        "uuid": "u-" + mid,
        "timestamp": _t(s),
        **extra,
        "message": {
            "id": mid,
            "role": "assistant",
            "model": MODEL,
            "content": content or [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 100, "output_tokens": out},
        },
    }


def _projects(tmp_path: Path) -> Path:
    root = tmp_path / "projects" / "-home-u-p"
    sub = root / SID / "subagents"
    sub.mkdir(parents=True)
    spawn = {"type": "tool_use", "id": "toolu_spawn", "name": "Agent", "input": {"prompt": "look", "description": "d"}}
    main = [
        _assistant("m0", 1, 1),  # before any prompt (a resumed session's replay, say)
        _user("p1u", 2, "p1", 0, "first question"),
        _assistant("m1", 3, 2),
        _user("p2u", 10, "p2", 1, "spawn a helper"),
        _assistant("m2", 11, 4, [spawn]),
        {
            "type": "user",
            "sessionId": SID,
            "uuid": "r2",
            "promptId": "p2",
            "timestamp": _t(12),
            "toolUseResult": {"status": "async_launched", "isAsync": True, "agentId": "a1"},
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_spawn", "content": "launched"}],
            },
        },
        _user("p3u", 20, "p3", 2, "third"),
        _assistant("m4", 21, 8),
    ]
    helper = [
        {
            "type": "user",
            "sessionId": SID,
            "agentId": "a1",
            "isSidechain": True,
            "uuid": "s1",
            "parentUuid": None,
            "promptId": "p2",
            "timestamp": _t(13),
            "message": {"role": "user", "content": "look"},
        },
        _assistant("m3", 30, 16, agentId="a1", isSidechain=True),  # after p3 began: still p2's work
    ]
    (root / f"{SID}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in main))
    (sub / "agent-a1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in helper))
    return tmp_path / "projects"


def _run(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args), env={"COLUMNS": "100"}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_work_is_grouped_by_the_prompt_it_answered(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    _run("ingest", "--db", str(db), "--projects", str(_projects(tmp_path)))
    doc = json.loads(_run("tree", SID, "--db", str(db), "--by", "prompt", "--json"))
    assert doc["by"] == "prompt"
    got = {p["prompt_id"]: p for p in doc["prompts"]}
    assert [p["prompt_id"] for p in doc["prompts"]] == ["p1", "p2", "p3"]
    assert [p["prompt_index"] for p in doc["prompts"]] == [0, 1, 2]
    assert got["p1"]["text"] == "first question" and got["p1"]["first_at"] == _t(2)
    assert got["p1"]["totals"]["output"] == 2
    assert got["p2"]["totals"]["output"] == 4 + 16 and got["p2"]["agents"] == ["a1"]
    assert got["p2"]["tool_calls"] == {"total": 1, "by_status": {"completed": 1}, "by_tool": {"Agent": 1}}
    assert got["p3"]["totals"]["output"] == 8 and got["p3"]["agents"] == []
    assert doc["no_prompt"]["totals"]["output"] == 1
    groups = [*doc["prompts"], doc["no_prompt"]]
    assert sum(g["tokens"] for g in groups) == doc["session"]["tokens"]
    assert sum(g["billed_messages"] for g in groups) == doc["session"]["billed_messages"] == 5
    text = _run("tree", SID, "--db", str(db), "--by", "prompt", "--tz", "UTC")
    assert "3 prompts" in text and "spawn a helper" in text and "before any prompt" in text
    assert "#2  2026-12-01 10:00" in text and "1 subagent" in text


def test_a_placer_follows_spawns_then_time() -> None:
    p = Placer.of(
        [("p1", _t(2)), ("p2", _t(10)), ("px", None)],
        {"a1": None, "a2": "a1", "a3": None},
        {"a1": "p1", "a2": None, "a3": None},
    )
    assert p.place("a2", None, _t(50)) == "p1"  # a grandchild inherits its ancestor's prompt
    assert p.place("a3", None, _t(11)) == "p2"  # no spawn prompt: by time
    assert p.place(None, None, _t(1)) is None and p.place(None, None, None) is None
    assert p.place("a1", "p2", _t(3)) == "p2"  # a call that names its prompt keeps it
    cyclic = Placer.of([], {"x": "y", "y": "x"}, {"x": None, "y": None})
    assert cyclic.place("x", None, _t(1)) is None


def test_an_unknown_grouping_is_refused(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["tree", SID, "--db", str(tmp_path / "x.db"), "--by", "model"])
    assert r.exit_code == 2 and "'model' is not one of 'agent', 'prompt'" in r.output
