"""``core.activity``: what a record says an agent did: the person's prompts (not tool results,
meta lines, summaries or notifications), one line per tool call's input, and its result."""

from __future__ import annotations

from typing import Any

import pytest

from ingestd.core import activity as act


def user(content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": content}, **extra}


@pytest.mark.parametrize(
    ("record", "prompt"),
    [
        (user("  Fix the parser  "), "Fix the parser"),
        (user([{"type": "text", "text": "Look at this"}, {"type": "image"}]), "Look at this"),
        (user("<command-name>/review</command-name><command-args>PR 12</command-args>"), "/review PR 12"),
        (user([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]), None),
        (user("hi", isMeta=True), None),
        (user("This session is being continued from a previous conversation", isCompactSummary=True), None),
        (user("<task-notification>\n<task-id>b7636e2</task-id>"), None),
        (user("<local-command-stdout>done</local-command-stdout>"), None),
        (user("sub task", isSidechain=True), None),
        (user("sub task", agentId="a2898e3"), None),
        ({"type": "assistant", "message": {"content": "hi"}}, None),
    ],
)
def test_prompt_text_is_what_the_person_typed(record: dict[str, Any], prompt: str | None) -> None:
    assert act.prompt_text(record) == prompt


@pytest.mark.parametrize(
    ("name", "tool_input", "summary"),
    [
        ("Bash", {"command": "make test\n", "description": "Run tests"}, "make test"),
        ("Read", {"file_path": "/src/a.py"}, "/src/a.py"),
        ("Edit", {"file_path": "/src/a.py", "old_string": "x", "new_string": "y"}, "/src/a.py"),
        ("Grep", {"pattern": "def main", "path": "src"}, "def main  in src"),
        ("Glob", {"pattern": "**/*.ts"}, "**/*.ts"),
        ("WebFetch", {"url": "https://example.com/x", "prompt": "summarise"}, "https://example.com/x"),
        (
            "Task",
            {"description": "Explore the code", "prompt": "Very thorough", "subagent_type": "Explore"},
            "Explore the code",
        ),
        ("Agent", {"description": "Read a file", "prompt": "read hello.txt"}, "Read a file"),
        ("TodoWrite", {"todos": [{}, {}, {}]}, "3 todos"),
        ("mcp__x__y", {"n": 1, "query": "weather  in\nParis"}, "weather in Paris"),
        ("Other", {"n": 1}, '{"n":1}'),
    ],
)
def test_input_summary_says_what_the_call_did(name: str, tool_input: dict[str, Any], summary: str) -> None:
    assert act.input_summary(name, tool_input) == summary


def test_long_values_are_bounded() -> None:
    s = act.input_summary("Bash", {"command": "x" * 10_000})
    assert len(s) == act.SUMMARY_CHARS and s.endswith("…")
    assert len(act.input_text({"content": "y" * 10_000})) == act.INPUT_CHARS
    [res] = act.tool_results(user([{"type": "tool_result", "tool_use_id": "t", "content": "é" * 5000}]))
    assert res.size_bytes == 10_000 and len(res.to_json()["preview"]) == act.PREVIEW_CHARS


def test_tool_uses_and_results_of_transcript_records() -> None:
    rec = {
        "type": "assistant",
        "agentId": "a1",
        "message": {
            "content": [
                {"type": "text", "text": "x"},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
            ]
        },
    }
    assert act.tool_uses(rec) == [act.ToolUse("t1", "Bash", {"command": "ls"}, "a1")]
    content = [
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "is_error": True,
            "content": [{"type": "text", "text": "no such file"}],
        }
    ]
    [res] = act.tool_results(user(content))
    assert (res.tool_use_id, res.is_error, res.text, res.size_bytes) == ("t1", True, "no such file", 12)


def test_hooks_give_the_prompt_the_input_and_the_result() -> None:
    assert act.hook_prompt({"prompt": " deploy it "}) == "deploy it"
    body = {"tool_use_id": "t", "tool_name": "Bash", "tool_input": {"command": "echo hi"}}
    post = body | {"tool_response": {"stdout": "hi", "stderr": "", "interrupted": False}}
    assert act.hook_tool_use("PreToolUse", body) == act.ToolUse("t", "Bash", {"command": "echo hi"}, None)
    res = act.hook_tool_result("PostToolUse", post)
    assert res is not None and (res.is_error, res.text) == (False, "hi")
    failed = act.hook_tool_result("PostToolUseFailure", body | {"error": "File does not exist."})
    assert failed is not None and failed.is_error and failed.text == "File does not exist."
    assert act.hook_tool_use("Stop", body) is None
