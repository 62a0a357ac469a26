"""Folding hook deliveries into the session state (SPEC §4.2, §4.5, §4.7), pure.

A hook row's ``event_type`` is ``hook_event_name`` and its payload the JSON body; its time
is the receipt time (``received_at``). FORMATS.md §7 lists the fields; agent status rules:
UserPromptSubmit / tool events / SubagentStart are activity, Stop and Notification make the
main agent wait, SubagentStop completes an agent that exists (never its parent), SessionEnd
completes every agent of the session.
"""

from __future__ import annotations

from typing import Any

from ingestd.core.records import LogRow
from ingestd.core.state import SPAWN_TOOLS, SessionState, Spawn
from ingestd.core.toolstatus import COMPLETED, DENIED, FAILED, INTERRUPTED, RUNNING
from ingestd.core.touch import Touched, agent_ev, link, note_result, note_title, note_tool

_TOOL_EVENTS = {"PreToolUse": RUNNING, "PostToolUse": COMPLETED, "PostToolUseFailure": FAILED}
_WAITING = frozenset(("Stop", "Notification", "StopFailure"))


def _s(obj: dict[str, Any], key: str) -> str | None:
    v = obj.get(key)
    return v if isinstance(v, str) and v else None


def fold_hook(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched) -> tuple[Any, ...]:
    """Fold one hook delivery; return its ``events`` row (identifiers only)."""
    name = row.event_type
    ts = row.received_at
    sid = state.session_id
    agent_id = _s(obj, "agent_id")
    agent = agent_id or sid
    t.session = True
    cwd = _s(obj, "cwd")
    if cwd and (state.cwd is None or (2, ts, cwd) < state.cwd):
        state.cwd = (2, ts, cwd)
    tp = _s(obj, "transcript_path")
    if tp:
        parts = tp.replace("\\", "/").rstrip("/").split("/")
        # the transcript's folder; a transcript record's own path (rank 0) beats it (state.project_slug)
        if len(parts) >= 2 and parts[-2] and (state.project_slug is None or (1, parts[-2]) < state.project_slug):
            state.project_slug = (1, parts[-2])
    # `session_title` (SessionStart per DOC; seen on UserPromptSubmit ≈2.1.119, corpus/hooks/
    # ice-hockey-game/UserPromptSubmit.jsonl session 6c5a3ad0…): the session's current name, so the
    # newest receipt wins over an older name and over a transcript summary
    title = _s(obj, "session_title")
    if title:
        note_title(state, "session_title", (ts,), title)
    if state.first_ts is None or ts < state.first_ts:
        state.first_ts = ts
    if state.last_ts is None or ts > state.last_ts:
        state.last_ts = ts

    if name == "SessionEnd":
        state.ended = True
        reason = _s(obj, "reason")
        if reason and (state.end_reason is None or (ts, reason) > state.end_reason):
            state.end_reason = (ts, reason)
        t.all_agents = True
        return (row.id, sid, agent_id or sid, name, ts)
    if name == "SubagentStop":
        # completes the named agent only if it exists through other evidence; the parent is untouched
        if agent_id:
            ev = agent_ev(state, agent_id)
            ev.completed = True
            at = _s(obj, "agent_type")
            if at and (ev.hook_type is None or at > ev.hook_type):
                ev.hook_type = at
            t.agents.add(agent_id)
        return (row.id, sid, agent_id, name, ts)

    status = "waiting" if name in _WAITING else "working"
    if name in _WAITING and agent_id:
        status = "working"  # a subagent's Stop-like events never idle the main agent
    ev = agent_ev(state, agent)
    ev.ran = True
    if ev.first_ts is None or ts < ev.first_ts:
        ev.first_ts = ts
    if ev.last_ts is None or ts > ev.last_ts:
        ev.last_ts = ts
    if ev.latest is None or (ts, status) > ev.latest:
        ev.latest = (ts, status)
    at = _s(obj, "agent_type")
    if agent_id and at and (ev.hook_type is None or at > ev.hook_type):
        ev.hook_type = at
    t.agents.add(agent)

    # a subagent's run ended in failure (toolstatus.FAILED_ENDINGS); the receipt time orders it
    # against the agent's transcript turns
    failed = _failed_turn(name, obj) if agent_id else None
    if failed is not None and (ev.last_turn is None or (ts, failed) > ev.last_turn):
        ev.last_turn = (ts, failed)

    tuid = _s(obj, "tool_use_id")
    if name in _TOOL_EVENTS and tuid:
        st = _TOOL_EVENTS[name]
        if name == "PostToolUseFailure" and obj.get("is_interrupt") is True:
            st = INTERRUPTED
        tool = _s(obj, "tool_name")
        if st == RUNNING:
            note_tool(state, t, tuid, agent=agent, agent_named=agent_id is not None, name=tool, started=ts)
        else:
            note_tool(state, t, tuid, agent=agent, agent_named=agent_id is not None, name=tool, ended=ts, status=st)
        resp = obj.get("tool_response")
        resp = resp if isinstance(resp, dict) else {}
        if tool in SPAWN_TOOLS and name != "PostToolUseFailure":
            _spawn(state, tuid, agent, ts, obj, resp)
            t.all_agents = True
        if name == "PostToolUse":
            # The spawn's result names the child (SPEC §4.3; FORMATS.md §4, §7.4): corpus/hooks/
            # cka-buddy/PostToolUse.jsonl, session 11473b9f…, Task toolu_01CPvj… ->
            # tool_response.agentId a282eece383c71f91. A background run (`status: "async_launched"`,
            # `isAsync: true`: session 1577d3a9…, af4a5e4c13f90b637) names it too, but its launch is
            # no completion.
            child = resp.get("agentId")
            if isinstance(child, str) and child:
                link(state, tuid, "tool_use", child)
                if resp.get("status") != "async_launched" and resp.get("isAsync") is not True:
                    note_result(state, tuid, False, None, ts)
                t.all_agents = True
    elif name == "PermissionRequest" and tuid:
        # PermissionRequest carries no tool_use_id (FORMATS.md §7.2, obs + DOC; e.g.
        # corpus/hooks/crypto/PermissionRequest.jsonl: tool_name "Bash", tool_input, permission_suggestions,
        # no id), so this branch only serves a future version that adds one, and it asserts no outcome.
        # Without an id the request is kept in the log and in `events` and is activity of its agent,
        # but it never touches tool_calls: (session, tool_name, tool_input) is not an identity (the same
        # command can be asked for twice in one turn), and the request says only that permission was
        # asked, not how the user answered. The answer shows structurally elsewhere: a denial or
        # cancellation is the transcript tool_result of that tool_use id (toolstatus.result_status),
        # an allowed call its PostToolUse; a PermissionDenied hook (below) names the id.
        note_tool(state, t, tuid, agent=agent, agent_named=agent_id is not None, name=_s(obj, "tool_name"))
    elif name == "PermissionDenied" and tuid:
        note_tool(
            state,
            t,
            tuid,
            agent=agent,
            agent_named=agent_id is not None,
            name=_s(obj, "tool_name"),
            ended=ts,
            status=DENIED,
        )
    return (row.id, sid, agent_id or sid, name, ts)


def _spawn(state: SessionState, tuid: str, agent: str, ts: str, obj: dict[str, Any], resp: dict[str, Any]) -> None:
    """Merge a spawn tool's PreToolUse / PostToolUse into ``state.hook_spawns`` (every field a join).

    The caller is the hook's agent: the main agent when the hook has no ``agent_id``, else the
    subagent it fired in (a grandchild's spawn). The time is the earliest receipt; the type is the
    spawn input's ``subagent_type``, else the result's ``agentType`` (≈2.1.119, corpus/hooks/
    ice-hockey-game/PostToolUse.jsonl: claude-code-guide a85d70b493ba1f581).
    """
    inp = obj.get("tool_input")
    inp = inp if isinstance(inp, dict) else {}
    stype = _s(inp, "subagent_type") or _s(resp, "agentType")
    desc = _s(inp, "description")
    prompt = _s(inp, "prompt")
    cur = state.hook_spawns.get(tuid)
    if cur is None:
        state.hook_spawns[tuid] = Spawn(agent, ts, stype, desc, prompt)
        return
    cur.agent = min(cur.agent, agent)
    cur.ts = min(cur.ts, ts)
    cur.subagent_type = _join(cur.subagent_type, stype)
    cur.description = _join(cur.description, desc)
    cur.prompt = _join(cur.prompt, prompt)


def _join(a: str | None, b: str | None) -> str | None:
    return b if a is None or (b is not None and b > a) else a


def _failed_turn(name: str, obj: dict[str, Any]) -> str | None:
    """The failure kind a hook reports for the agent it names, or None.

    PostToolUseFailure ``is_interrupt: true``: the user interrupted the run (every payload carries
    the flag, e.g. corpus/hooks/cka-buddy/PostToolUseFailure.jsonl, all ``false`` in the corpus:
    plain tool errors, which end nothing). StopFailure (DOC, CL 2.1.78): the turn
    ended on an API error, ``error: "rate_limit"`` or another (``overloaded`` ...).
    """
    if name == "PostToolUseFailure" and obj.get("is_interrupt") is True:
        return "interrupt"
    if name == "StopFailure":
        return "rate_limit" if obj.get("error") == "rate_limit" else "api_error"
    return None
