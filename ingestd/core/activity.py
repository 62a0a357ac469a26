"""What an agent did, read back from log records: the person's prompts, each tool call's input in
a line and its result, for the page and the read API (SPEC §9, §14).

Everything here takes one decoded record (a transcript line's object or a hook body) and returns
plain values; nothing is projected or stored: the log is read again, so history has the same
detail as a live session. Text is returned as it is (the page renders it as text, the terminal
through ``report.printable``); only its length is bounded, by the ``*_CHARS`` limits.

Prompts: a transcript ``user`` record whose content is text the person typed, not a tool result,
a meta line (``isMeta``), a compaction's summary (``isCompactSummary``), a task notification or a
local command's output (corpus/claude-projects/-home-user-projects-spotter-worktrees-spotter-dov/
4d5611e5-….jsonl holds each); a slash command reads ``/name args``. A sidechain's first user
record is its agent's prompt, not the person's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

SUMMARY_CHARS = 300  # an input summary: one line on the page
INPUT_CHARS = 4000  # the full input shown on demand, as JSON text
PREVIEW_CHARS = 2000  # the start of a result shown on demand
PROMPT_CHARS = 4000  # a prompt (the page cuts it shorter and expands on demand)

# tool name -> the input field that says what the call did, in order of preference
_SUMMARY_FIELDS: dict[str, tuple[str, ...]] = {
    "Bash": ("command",),
    "BashOutput": ("bash_id",),
    "KillShell": ("shell_id",),
    "Read": ("file_path",),
    "Write": ("file_path",),
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "NotebookRead": ("notebook_path",),
    "LS": ("path",),
    "Glob": ("pattern",),
    "Grep": ("pattern",),
    "WebFetch": ("url",),
    "WebSearch": ("query",),
    "Task": ("description",),
    "Agent": ("description",),
    "TaskOutput": ("task_id",),
    "Skill": ("skill", "command"),
    "SlashCommand": ("command",),
}
_NOT_TYPED = ("<task-notification>", "<local-command-", "Caveat: The messages below", "[Request interrupted")
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, a cut end marked with an ellipsis. Pure."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _text_blocks(content: Any) -> str | None:
    """A message's text: the string, or its text blocks joined; None when it holds a tool result."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = []
    for b in content:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "tool_result":
            return None
        if b.get("type") == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
    return "\n".join(parts) if parts else None


def prompt_text(obj: dict[str, Any]) -> str | None:
    """The prompt a person typed, from a transcript ``user`` record on the main thread; None for
    anything else (see the module docstring). Pure."""
    if obj.get("type") != "user" or obj.get("isSidechain") is True or obj.get("agentId"):
        return None
    if obj.get("isMeta") is True or obj.get("isCompactSummary") is True or obj.get("isVisibleInTranscriptOnly"):
        return None
    msg = obj.get("message")
    text = _text_blocks(msg.get("content")) if isinstance(msg, dict) else None
    if text is None:
        return None
    text = text.strip()
    if not text or text.startswith(_NOT_TYPED):
        return None
    if text.startswith("<command-"):
        name = _COMMAND.search(text)
        if name is None:
            return None
        args = _ARGS.search(text)
        text = (name.group(1).strip() + " " + (args.group(1).strip() if args else "")).strip()
    return cut(text, PROMPT_CHARS) or None


def hook_prompt(body: dict[str, Any]) -> str | None:
    """The prompt of a ``UserPromptSubmit`` hook body. Pure."""
    p = body.get("prompt")
    return cut(p.strip(), PROMPT_CHARS) if isinstance(p, str) and p.strip() else None


def input_summary(name: str | None, tool_input: Any) -> str:
    """One line of what a call did: the Bash command, the file path, the Grep / Glob pattern (and
    where), the URL, the Task / Agent description; else the input's first short text field, else
    its JSON. Pure."""
    if not isinstance(tool_input, dict):
        return "" if tool_input is None else cut(str(tool_input), SUMMARY_CHARS)
    for field in _SUMMARY_FIELDS.get(name or "", ()):
        v = tool_input.get(field)
        if isinstance(v, str) and v:
            v = v.strip() if name == "Bash" else " ".join(v.split())
            if name in ("Grep", "Glob") and isinstance(tool_input.get("path"), str):
                v = f"{v}  in {tool_input['path']}"
            return cut(v, SUMMARY_CHARS)
    if name == "TodoWrite" and isinstance(tool_input.get("todos"), list):
        todos = tool_input["todos"]
        return f"{len(todos)} todo{'' if len(todos) == 1 else 's'}"
    for v in tool_input.values():
        if isinstance(v, str) and v.strip():
            return cut(" ".join(v.split()), SUMMARY_CHARS)
    return cut(orjson.dumps(tool_input).decode(), SUMMARY_CHARS)


def input_text(tool_input: Any) -> str:
    """The full input as indented JSON, bounded by ``INPUT_CHARS``. Pure."""
    try:
        text = orjson.dumps(tool_input, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        text = str(tool_input)
    return cut(text, INPUT_CHARS)


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A ``tool_use`` block of an assistant record.

    Attributes:
        tool_use_id: str. name: str | None, the tool. input: Any, the input as logged.
        agent_id: str | None, the record's ``agentId`` (a sidechain's), None on the main thread.
    """

    tool_use_id: str
    name: str | None
    input: Any
    agent_id: str | None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A ``tool_result`` block of a user record (or a Post hook's response).

    Attributes:
        tool_use_id: str. is_error: bool. text: str, the result's text (all of it).
        size_bytes: int, the UTF-8 length of ``text``.
    """

    tool_use_id: str
    is_error: bool
    text: str
    size_bytes: int

    def to_json(self) -> dict[str, Any]:
        """``{"is_error", "size_bytes", "preview"}``: the start of the text (``PREVIEW_CHARS``)."""
        return {"is_error": self.is_error, "size_bytes": self.size_bytes, "preview": cut(self.text, PREVIEW_CHARS)}


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                parts.append(b["text"])
            elif isinstance(b, dict) and b.get("type") == "image":
                parts.append("[image]")
        return "\n".join(parts)
    return "" if content is None else orjson.dumps(content).decode()


def _result(tuid: str, is_error: bool, text: str) -> ToolResult:
    return ToolResult(tuid, is_error, text, len(text.encode("utf-8", "surrogatepass")))


def tool_uses(obj: dict[str, Any]) -> list[ToolUse]:
    """The ``tool_use`` blocks of a transcript ``assistant`` record. Pure."""
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if obj.get("type") != "assistant" or not isinstance(content, list):
        return []
    aid = obj.get("agentId") if isinstance(obj.get("agentId"), str) else None
    return [
        ToolUse(b["id"], b.get("name") if isinstance(b.get("name"), str) else None, b.get("input"), aid)
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)
    ]


def tool_results(obj: dict[str, Any]) -> list[ToolResult]:
    """The ``tool_result`` blocks of a transcript ``user`` record. Pure."""
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if obj.get("type") != "user" or not isinstance(content, list):
        return []
    return [
        _result(b["tool_use_id"], b.get("is_error") is True, _result_text(b.get("content")))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
    ]


def hook_tool_use(event: str, body: dict[str, Any]) -> ToolUse | None:
    """The call a ``PreToolUse`` / ``PostToolUse`` / ``PostToolUseFailure`` hook names. Pure."""
    tuid = body.get("tool_use_id")
    if event not in ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest") or not isinstance(
        tuid, str
    ):
        return None
    name = body.get("tool_name")
    aid = body.get("agent_id")
    return ToolUse(
        tuid, name if isinstance(name, str) else None, body.get("tool_input"), aid if isinstance(aid, str) else None
    )


def hook_tool_result(event: str, body: dict[str, Any]) -> ToolResult | None:
    """The result a ``PostToolUse`` (its ``tool_response``) or ``PostToolUseFailure`` (its
    ``error``) hook carries. Pure."""
    tuid = body.get("tool_use_id")
    if not isinstance(tuid, str):
        return None
    if event == "PostToolUse":
        resp = body.get("tool_response")
        text = resp if isinstance(resp, str) else _response_text(resp)
        return _result(tuid, False, text)
    if event == "PostToolUseFailure":
        err = body.get("error")
        return _result(tuid, True, err if isinstance(err, str) else _result_text(err))
    return None


def _response_text(resp: Any) -> str:
    """A hook's ``tool_response``: Bash's stdout and stderr, a text result's content, else JSON."""
    if isinstance(resp, dict):
        if isinstance(resp.get("stdout"), str) or isinstance(resp.get("stderr"), str):
            return "\n".join(x for x in (resp.get("stdout"), resp.get("stderr")) if isinstance(x, str) and x)
        if "content" in resp:
            return _result_text(resp["content"])
    return _result_text(resp)
