"""What a real Claude Code 2.1.332 sends to hooks, checked live (docs/claude-code.md §1 states it).

Each test runs a scenario of ``tests.realclaude.scenarios`` with an http and a command hook on every
event, and checks the facts the docs and ``fixtures/claude-2.1.332/hooks`` record.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.realclaude.capture import OUT
from tests.realclaude.scenarios import EVENTS, SCENARIOS, Capture, run_scenario

# http hooks are skipped for these (the debug log: "HTTP hooks are not supported for SessionStart")
COMMAND_ONLY = {"SessionStart", "Setup"}


def key_sets(bodies: list[dict[str, Any]]) -> dict[str, set[frozenset[str]]]:
    out: dict[str, set[frozenset[str]]] = defaultdict(set)
    for b in bodies:
        out[b["hook_event_name"]].add(frozenset(b))
    return dict(out)


def fixture_bodies(scenario: str) -> list[dict[str, Any]]:
    bodies = []
    for path in sorted((OUT / "hooks").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if entry["scenario"] == scenario:
                bodies.append(entry["body"])
    return bodies


@pytest.fixture(scope="module")
def spawn(claude_code: Path, tmp_path_factory: pytest.TempPathFactory) -> Capture:
    return run_scenario("spawn", claude_code, tmp_path_factory.mktemp("spawn"))


def test_every_event_is_one_claude_code_knows(spawn: Capture) -> None:
    assert set(spawn.fired()) <= set(EVENTS)
    assert len(EVENTS) == 34


def test_session_start_refuses_http_hooks_and_the_rest_take_both(spawn: Capture) -> None:
    http, command = set(spawn.fired("http")), set(spawn.fired("command"))
    assert "SessionStart" in command and "SessionStart" not in http
    assert "HTTP hooks are not supported for SessionStart" in spawn.runs[0].debug()
    assert command - COMMAND_ONLY == http


def test_http_and_command_hooks_get_the_same_bodies(spawn: Capture) -> None:
    by_kind: dict[str, list[str]] = defaultdict(list)
    for h in spawn.hooks():
        if h.name not in COMMAND_ONLY:
            by_kind[h.kind].append(json.dumps(h.json(), sort_keys=True))
    assert sorted(by_kind["http"]) == sorted(by_kind["command"])


def test_every_body_after_the_first_prompt_carries_its_prompt_id(spawn: Capture) -> None:
    # the events of the session's start fire before any prompt; the others after it. Judged by event,
    # not by place: command hooks are recorded as their processes finish, and on a loaded machine
    # InstructionsLoaded's was recorded after the prompt's
    before = {"SessionStart", "InstructionsLoaded"}
    bodies = [h.json() for h in spawn.hooks("command")]
    assert "UserPromptSubmit" in {b["hook_event_name"] for b in bodies}
    assert all(
        re.fullmatch(r"[0-9a-f-]{36}", b.get("prompt_id", "")) for b in bodies if b["hook_event_name"] not in before
    )
    assert not [b for b in bodies if b["hook_event_name"] in before and "prompt_id" in b]


def test_an_async_spawn_and_its_task_notification(spawn: Capture) -> None:
    bodies = [h.json() for h in spawn.hooks("http")]
    agent_post = next(b for b in bodies if b["hook_event_name"] == "PostToolUse" and b["tool_name"] == "Agent")
    response = agent_post["tool_response"]
    assert response["isAsync"] is True and response["status"] == "async_launched"
    agent_id, spawn_id = response["agentId"], agent_post["tool_use_id"]
    start = next(b for b in bodies if b["hook_event_name"] == "SubagentStart")
    stop = next(b for b in bodies if b["hook_event_name"] == "SubagentStop")
    assert start["agent_id"] == stop["agent_id"] == agent_id
    assert stop["agent_transcript_path"].endswith(f"/subagents/agent-{agent_id}.jsonl")
    sub_tools = [b for b in bodies if b["hook_event_name"] == "PreToolUse" and b.get("agent_id") == agent_id]
    assert [b["tool_name"] for b in sub_tools] == ["Read"] and sub_tools[0]["agent_type"] == "general-purpose"
    notice = next(
        b["prompt"]
        for b in bodies
        if b["hook_event_name"] == "UserPromptSubmit" and "<task-notification>" in b["prompt"]
    )
    assert f"<task-id>{agent_id}</task-id>" in notice and f"<tool-use-id>{spawn_id}</tool-use-id>" in notice
    assert "<status>completed</status>" in notice and "<usage><subagent_tokens>" in notice
    meta = json.loads(next(spawn.runs[0].projects.rglob(f"agent-{agent_id}.meta.json")).read_text())
    assert meta["toolUseId"] == spawn_id and meta["agentType"] == "general-purpose"
    assert meta["finished"] is True and meta["requestShape"] == "background" and meta["spawnDepth"] == 1


def test_the_spawn_fixtures_have_the_live_shapes(spawn: Capture) -> None:
    live = key_sets([h.json() for h in spawn.hooks("command")] + [h.json() for h in spawn.hooks("http")])
    assert key_sets(fixture_bodies("spawn")) == live


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - {"spawn"}))
def test_the_fixtures_of_every_scenario_have_the_live_shapes(name: str, claude_code: Path, tmp_path: Path) -> None:
    cap = run_scenario(name, claude_code, tmp_path)
    live = key_sets([h.json() for h in cap.hooks()])
    assert key_sets(fixture_bodies(name)) == live
