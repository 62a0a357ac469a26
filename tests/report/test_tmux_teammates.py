"""A teammate run in its own terminal (agent teams, tmux mode) is a session of its own whose
records name its team and itself (``teamName``, ``agentName``: 2.1.332 bundle); ``tree`` attributes
it to its lead, the session of that team whose spawn named it, with its own tokens and cost beside
the lead's, never added, in either order of ingestion, replay-identical."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ingestd.cli import cli

LEAD = "1ead0000-0000-4000-8000-000000000001"
MATE = "a11ce000-0000-4000-8000-000000000002"
TEAM = "session-1ead0000"
MODEL = "claude-sonnet-4-5-20250929"
PROMPT = "Audit the relay module's tests"


def _t(s: int) -> str:
    return f"2026-12-01T10:00:{s:02d}.000Z"


def _base(sid: str, uuid: str, parent: str | None, s: int, cwd: str) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "teamName": TEAM,
        "userType": "external",
        "cwd": cwd,
        "sessionId": sid,
        "version": "2.1.332",
        "uuid": uuid,
        "timestamp": _t(s),
    }


def _assistant(
    sid: str, uuid: str, parent: str, s: int, cwd: str, mid: str, content: list[Any], out: int
) -> dict[str, Any]:
    usage = {"input_tokens": 100, "output_tokens": out, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    return {
        **_base(sid, uuid, parent, s, cwd),
        "type": "assistant",
        "requestId": f"req_{mid}",
        "message": {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": "end_turn",
            "usage": usage,
        },
    }


def lead_records() -> list[dict[str, Any]]:
    cwd = "/home/u/app"
    spawn = {
        "type": "tool_use",
        "id": "toolu_mate",
        "name": "Agent",
        "input": {
            "name": "alice",
            "prompt": PROMPT,
            "description": "relay tests",
            "subagent_type": "general-purpose",
            "team_name": TEAM,
            "run_in_background": True,
        },
    }
    result = {
        "status": "teammate_spawned",
        "prompt": PROMPT,
        "agentId": "alice@" + TEAM,
        "teammate_id": "alice@" + TEAM,
        "name": "alice",
        "team_name": TEAM,
        "tmux_pane_id": "%3",
        "model": MODEL,
    }
    return [
        {**_base(LEAD, "l1", None, 1, cwd), "type": "user", "message": {"role": "user", "content": "Split the audit"}},
        _assistant(LEAD, "l2", "l1", 2, cwd, "msg_lead_1", [spawn], 20),
        {
            **_base(LEAD, "l3", "l2", 3, cwd),
            "type": "user",
            "toolUseResult": result,
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_mate",
                        "content": [{"type": "text", "text": json.dumps(result)}],
                    }
                ],
            },
        },
    ]


def mate_records() -> list[dict[str, Any]]:
    cwd = "/home/u/app/relay"  # its own working directory: another projects folder
    first = f'<teammate-message teammate_id="team-lead">{PROMPT}</teammate-message>'
    return [
        {
            **_base(MATE, "m1", None, 5, cwd),
            "agentName": "alice",
            "type": "user",
            "message": {"role": "user", "content": first},
        },
        {
            **_assistant(MATE, "m2", "m1", 6, cwd, "msg_mate_1", [{"type": "text", "text": "96% covered"}], 30),
            "agentName": "alice",
        },
    ]


def _write(root: Path, folder: str, sid: str, records: list[dict[str, Any]]) -> None:
    d = root / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def _run(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_a_tmux_teammate_is_attributed_to_its_lead_in_either_order(tmp_path: Path) -> None:
    files = [("-home-u-app", LEAD, lead_records()), ("-home-u-app-relay", MATE, mate_records())]
    for order in (files, files[::-1]):
        base = tmp_path / order[0][1][:4]
        db, projects = base / "t.db", base / "projects"
        for folder, sid, recs in order:  # one file per ingest: the second joins the first
            _write(projects, folder, sid, recs)
            _run("ingest", "--db", str(db), "--projects", str(projects))
        mate = json.loads(_run("tree", MATE, "--db", str(db), "--json"))
        lead = mate["teammate_of"]
        assert (lead["session_id"], lead["name"], lead["team_name"]) == (LEAD, "alice", TEAM)
        assert lead["evidence"] == "spawn_name"
        doc = json.loads(_run("tree", LEAD, "--db", str(db), "--json"))
        (row,) = doc["teammate_sessions"]
        assert (row["session_id"], row["name"], row["agent_id"]) == (MATE, "alice", lead["agent_id"])
        assert row["tokens"] == 130 and row["billed_messages"] == 1
        # the lead's own cost holds only its own message
        assert doc["session"]["billed_messages"] == 1 and doc["session"]["tokens"] == 120
        text = _run("tree", LEAD, "--db", str(db))
        assert f"teammate alice in session {MATE}: 130 tok" in text
        assert f"teammate alice of lead session {LEAD} (via spawn name)" in _run("tree", MATE, "--db", str(db))
        replayed = json.loads(_run("replay", "--db", str(db), "--json"))
        assert replayed["ok"]


def test_a_session_of_another_team_or_no_name_is_no_teammate(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    _write(projects, "-home-u-app", LEAD, lead_records())
    other = [{**r, "teamName": "another-team"} for r in mate_records()]
    _write(projects, "-home-u-app-relay", MATE, other)
    db = tmp_path / "t.db"
    _run("ingest", "--db", str(db), "--projects", str(projects))
    assert json.loads(_run("tree", MATE, "--db", str(db), "--json"))["teammate_of"] is None
    assert json.loads(_run("tree", LEAD, "--db", str(db), "--json"))["teammate_sessions"] == []


def test_without_the_spawn_the_one_unnamed_session_of_the_team_is_the_lead(tmp_path: Path) -> None:
    """The lead's spawn not read (its file cut short): the team's one session whose records name no
    agent is the lead; with a second such session nothing tells which, and no lead is given."""
    projects = tmp_path / "projects"
    _write(projects, "-home-u-app", LEAD, lead_records()[:1])
    _write(projects, "-home-u-app-relay", MATE, mate_records())
    db = tmp_path / "t.db"
    _run("ingest", "--db", str(db), "--projects", str(projects))
    lead = json.loads(_run("tree", MATE, "--db", str(db), "--json"))["teammate_of"]
    assert (lead["session_id"], lead["agent_id"], lead["evidence"]) == (LEAD, None, "team_lead")
    second = "5ec0d000-0000-4000-8000-000000000003"
    _write(projects, "-home-u-other", second, [{**r, "sessionId": second} for r in lead_records()[:1]])
    _run("ingest", "--db", str(db), "--projects", str(projects))
    assert json.loads(_run("tree", MATE, "--db", str(db), "--json"))["teammate_of"] is None
