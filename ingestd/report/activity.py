"""What each agent of a session did, read from the log (SPEC §9, §14): the person's prompts in
order, each tool call's input and result, and a session's first prompt (its name when it has no
title or slug).

The log is read, not a projection: a session ingested from history has the same detail as one
watched live. Both stores are read (the central store keeps payloads as they were read; the local
one through ``store.payload.decode``). Read-only; ``ingestd.core.activity`` decides what a record
says.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ingestd.core import activity as act
from ingestd.store.connection import Db, storage_errors

# the log rows that can carry a prompt, a tool call or a result
_PROMPT_TYPES = ("user", "UserPromptSubmit")
_ACTIVITY_TYPES = ("user", "assistant", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure")
FIRST_PROMPT_ROWS = 200  # the first prompt is looked for in the session's first rows of those types


def _rows(conn: Db, session_id: str, types: tuple[str, ...], limit: int | None = None) -> Iterator[tuple[Any, ...]]:
    """``(id, source, event_type, received_at, payload bytes)`` of the session's log rows of
    ``types``, in log order."""
    marks = ", ".join("?" for _ in types)
    central = getattr(conn, "central", False)
    cols = "id, source, event_type, received_at, payload" + ("" if central else ", codec")
    sql = f"SELECT {cols} FROM events_raw WHERE session_id = ? AND event_type IN ({marks}) ORDER BY id"
    params: tuple[Any, ...] = (session_id, *types)
    if limit is not None:
        sql += " LIMIT ?"
        params += (limit,)
    if central:
        for rid, source, et, at, payload in conn.execute(sql, params):
            yield rid, source, et, at, bytes(payload)
        return
    from ingestd.store.payload import decode

    for rid, source, et, at, payload, codec in conn.execute(sql, params):
        yield rid, source, et, at, decode(conn, int(codec), payload)


def _objects(
    conn: Db, session_id: str, types: tuple[str, ...], limit: int | None = None
) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """``(source, event_type, received_at, object)`` of each row that parses to a JSON object."""
    for _rid, source, et, at, data in _rows(conn, session_id, types, limit):
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield source, et, at, obj


def _prompt(source: str, et: str, obj: dict[str, Any]) -> str | None:
    if source == "hook":
        return act.hook_prompt(obj) if et == "UserPromptSubmit" else None
    return act.prompt_text(obj)


def first_prompt(conn: Db, session_id: str) -> str | None:
    """The session's first prompt on one line (cut to ``act.SUMMARY_CHARS``), a slash command
    (``/mcp``) only when nothing else was typed; None when the log has none. Read-only."""
    command = None
    with storage_errors():
        for source, et, _at, obj in _objects(conn, session_id, _PROMPT_TYPES, FIRST_PROMPT_ROWS):
            p = _prompt(source, et, obj)
            if p is None:
                continue
            line = act.cut(" ".join(p.split()), act.SUMMARY_CHARS)
            if not line.startswith("/"):
                return line
            command = command or line
    return command


def session_name(row: dict[str, Any]) -> tuple[str | None, str | None]:
    """``(name, source)``: the title, else Claude Code's slug, else the first prompt (``source``
    ``title`` / ``slug`` / ``first_prompt``); ``(None, None)`` when there is none. Pure."""
    for key in ("title", "slug", "first_prompt"):
        v = row.get(key)
        if isinstance(v, str) and v.strip():
            return v, key
    return None, None


@dataclass
class _Call:
    use: act.ToolUse | None = None
    result: act.ToolResult | None = None


@dataclass
class Activity:
    """A session's prompts and tool calls as the log has them.

    Attributes:
        prompts: list of ``{"at", "text"}`` (``at``: the transcript record's timestamp, else the
            row's receipt time, canonical UTC), in log order; a prompt seen by a hook and in the
            transcript is listed once.
        calls: tool_use_id -> what the log says of the call.
    """

    prompts: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, _Call] = field(default_factory=dict)

    def call_json(self, tool_use_id: str) -> dict[str, Any]:
        """``{"input_summary", "input", "result"}`` of one call (None each where the log has none);
        ``result`` is ``ToolResult.to_json``."""
        c = self.calls.get(tool_use_id)
        use = c.use if c else None
        return {
            "input_summary": None if use is None else act.input_summary(use.name, use.input),
            "input": None if use is None else act.input_text(use.input),
            "result": None if c is None or c.result is None else c.result.to_json(),
        }

    def spawn_json(self, tool_use_id: str | None) -> dict[str, Any]:
        """``{"prompt", "answer"}`` of the Task / Agent call that spawned a subagent: its prompt and
        the result its parent received (the subagent's final answer), None each where unknown."""
        c = self.calls.get(tool_use_id) if tool_use_id else None
        prompt = None
        if c is not None and c.use is not None and isinstance(c.use.input, dict):
            p = c.use.input.get("prompt")
            prompt = act.cut(p, act.PROMPT_CHARS) if isinstance(p, str) else None
        answer = None if c is None or c.result is None else act.cut(c.result.text, act.PROMPT_CHARS)
        return {"prompt": prompt, "answer": answer}


def session_activity(conn: Db, session_id: str) -> Activity:
    """Read the session's prompts and tool calls from the log. Read-only.

    A call's input is the transcript's ``tool_use`` block, else its ``PreToolUse`` hook; its result
    the transcript's ``tool_result`` block, else its ``PostToolUse`` / ``PostToolUseFailure`` hook.
    """
    out = Activity()
    hooked: list[dict[str, Any]] = []
    with storage_errors():
        for source, et, at, obj in _objects(conn, session_id, _ACTIVITY_TYPES):
            if source == "hook":
                _hook(out, et, at, obj, hooked)
                continue
            for use in act.tool_uses(obj):
                out.calls.setdefault(use.tool_use_id, _Call()).use = use
            for res in act.tool_results(obj):
                out.calls.setdefault(res.tool_use_id, _Call()).result = res
            text = act.prompt_text(obj)
            if text is not None:
                ts = obj.get("timestamp")
                out.prompts.append({"at": ts if isinstance(ts, str) else at, "text": text})
    # a prompt both a hook and the transcript saw is listed once (as often as the transcript has it)
    in_transcript = Counter(p["text"] for p in out.prompts)
    for p in hooked:
        if in_transcript[p["text"]]:
            in_transcript[p["text"]] -= 1
        else:
            out.prompts.append(p)
    out.prompts.sort(key=lambda p: p["at"] or "")
    return out


def _hook(out: Activity, et: str, at: str, body: dict[str, Any], prompts: list[dict[str, Any]]) -> None:
    """A hook row: a prompt (into ``prompts``), or a call's input or result where the transcript gave none."""
    if et == "UserPromptSubmit":
        p = act.hook_prompt(body)
        if p is not None:
            prompts.append({"at": at, "text": p})
        return
    use = act.hook_tool_use(et, body)
    if use is None:
        return
    call = out.calls.setdefault(use.tool_use_id, _Call())
    if call.use is None:
        call.use = use
    res = act.hook_tool_result(et, body)
    if res is not None and call.result is None:
        call.result = res
