"""Folding hook deliveries into the session state (SPEC §4.2, §4.5, §4.7), pure.

A hook row's ``event_type`` is ``hook_event_name`` and its payload the JSON body; its time
is the receipt time (``received_at``). FORMATS.md §7 lists the fields; agent status rules:
UserPromptSubmit / tool events / SubagentStart are activity, Stop and Notification make the
main agent wait, SubagentStop completes an agent that exists (never its parent), SessionEnd
completes every agent of the session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ingestd.core.activity import hook_prompt
from ingestd.core.blocks import is_notice, notice
from ingestd.core.records import LogRow
from ingestd.core.rows import EventRow
from ingestd.core.state import SPAWN_TOOLS, SessionState, Spawn, TaskEv
from ingestd.core.toolstatus import COMPLETED, DENIED, FAILED, INTERRUPTED, RUNNING
from ingestd.core.touch import Touched, agent_ev, link, note_prompt, note_result, note_title, note_tool

_TOOL_STATUS = {"PreToolUse": RUNNING, "PostToolUse": COMPLETED, "PostToolUseFailure": FAILED}
_WAITING = frozenset(("Stop", "Notification", "StopFailure", "Elicitation"))
# Events that say nothing of what an agent is doing: a settings or watched file changed, the working
# directory moved, a directory was added, instructions were loaded, the model switched (between
# prompts, over the SDK), Setup ran, a worktree was made or removed, a teammate went idle (another
# agent than the hook's). They land in ``events`` and the session's times, in no agent's status:
# 2.1.332 fires FileChanged and ConfigChange while the main agent waits for the user (after its Stop:
# fixtures/claude-2.1.332/hooks/index.json, scenario ``files_and_config``).
_NEUTRAL = frozenset(
    (
        "ConfigChange",
        "FileChanged",
        "CwdChanged",
        "DirectoryAdded",
        "InstructionsLoaded",
        "PreModelSwitch",
        "PostModelSwitch",
        "Setup",
        "WorktreeCreate",
        "WorktreeRemove",
        "MessageDisplay",
        "TeammateIdle",
    )
)


def _s(obj: dict[str, Any], key: str) -> str | None:
    v = obj.get(key)
    return v if isinstance(v, str) and v else None


@dataclass(frozen=True, slots=True)
class Hook:
    """One hook delivery as its handlers see it.

    Attributes:
        row: the log row; obj: its decoded body; session_id: str, the session folded.
        name: str, ``hook_event_name``; ts: str, the receipt time (canonical UTC).
        agent_id: str | None, the body's ``agent_id`` (a subagent's hook), else None.
        agent: str, ``agent_id`` or the session's main agent.
        prompt_id: str | None, the body's ``prompt_id`` (2.1.196+: the user prompt the event belongs
            to; absent before the first prompt and on Setup).
    """

    row: LogRow
    obj: dict[str, Any]
    session_id: str
    name: str
    ts: str
    agent_id: str | None
    agent: str
    prompt_id: str | None

    def event(self, agent: str | None) -> EventRow:
        """The delivery's ``events`` row (identifiers only), naming ``agent``."""
        return EventRow(self.row.id, self.session_id, agent, self.name, self.ts, self.prompt_id)


def fold_hook(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched) -> EventRow:
    """Fold one hook delivery through its event's handler (``_EVENTS``, else activity of its agent
    plus ``_TOOL_EVENTS`` for tool events); return its ``events`` row."""
    agent_id = _s(obj, "agent_id")
    h = Hook(
        row,
        obj,
        state.session_id,
        row.event_type,
        row.received_at,
        agent_id,
        agent_id or state.session_id,
        _s(obj, "prompt_id"),
    )
    _session_fields(state, h, t)
    mate = _s(obj, "teammate_name") if h.name in _TEAMMATE_EVENTS else None
    if mate is not None and mate not in state.teammates:
        state.teammates.add(mate)
        t.all_agents = True  # the agent so named is a teammate
    if h.prompt_id is not None:
        typed = hook_prompt(obj) if h.name == "UserPromptSubmit" and not h.agent_id else None
        note_prompt(state, t, h.prompt_id, h.ts, text=None if is_notice(typed) else typed)
    if h.name in _NEUTRAL:
        if h.name == "PostModelSwitch":
            _model_switch(state, h)
        return h.event(h.agent_id)
    handler = _EVENTS.get(h.name)
    if handler is not None:
        return handler(state, h, t)
    if h.name == "SessionStart" and h.obj.get("source") == "fork":
        state.fork_start = True
    if h.name == "SessionStart" and (state.start_at is None or h.ts > state.start_at):
        state.start_at = h.ts
        t.all_agents = t.all_agents or state.end_at is not None  # a resume: every agent's end may change
    _activity(state, h, t)
    if h.name in ("Stop", "StopFailure") and not h.agent_id:
        _turn_end(state, h)
    elif h.name in ("TaskCreated", "TaskCompleted"):
        _task(state, h, t)
    if h.name == "UserPromptSubmit":
        prompt = _s(obj, "prompt")
        if prompt is not None:
            notice(state, prompt, h.ts, t)  # a background agent's end delivered as a prompt (2.1.332)
    tuid = _s(obj, "tool_use_id")
    tool = _TOOL_EVENTS.get(h.name)
    if tool is not None and tuid:
        tool(state, h, tuid, t)
    return h.event(h.agent)


def _session_fields(state: SessionState, h: Hook, t: Touched) -> None:
    """What every delivery says about its session: cwd, the transcript's folder, title, times."""
    obj, ts = h.obj, h.ts
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


def _session_end(state: SessionState, h: Hook, t: Touched) -> EventRow:
    """SessionEnd: the session ended (every agent is re-derived), with its reason; a later
    SessionStart reopens it (``SessionState.ended``)."""
    if state.end_at is None or h.ts > state.end_at:
        state.end_at = h.ts
    reason = _s(h.obj, "reason")
    if reason and (state.end_reason is None or (h.ts, reason) > state.end_reason):
        state.end_reason = (h.ts, reason)
    t.all_agents = True
    return h.event(h.agent)


def _subagent_stop(state: SessionState, h: Hook, t: Touched) -> EventRow:
    """SubagentStop: completes the named agent only if it exists through other evidence; the parent
    is untouched."""
    if h.agent_id:
        ev = agent_ev(state, h.agent_id)
        ev.completed = True
        at = _s(h.obj, "agent_type")
        if at and (ev.hook_type is None or at > ev.hook_type):
            ev.hook_type = at
        t.agents.add(h.agent_id)
    return h.event(h.agent_id)


def _activity(state: SessionState, h: Hook, t: Touched) -> None:
    """Any other delivery is activity of its agent: working, or waiting for Stop-like events of the
    main agent; a subagent's failure ending is its last turn."""
    ts = h.ts
    waits = h.name in _WAITING or (h.name == "PostCompact" and h.obj.get("trigger") == "manual")
    # a manual /compact ends with the main agent waiting for the user again; an auto one is mid-turn
    status = "waiting" if waits and not h.agent_id else "working"
    ev = agent_ev(state, h.agent)
    ev.ran = True
    if ev.first_ts is None or ts < ev.first_ts:
        ev.first_ts = ts
    if ev.last_ts is None or ts > ev.last_ts:
        ev.last_ts = ts
    if ev.latest is None or (ts, status) > ev.latest:
        ev.latest = (ts, status)
    at = _s(h.obj, "agent_type")
    if h.agent_id and at and (ev.hook_type is None or at > ev.hook_type):
        ev.hook_type = at
    t.agents.add(h.agent)
    # a subagent's run ended in failure (toolstatus.FAILED_ENDINGS); the receipt time orders it
    # against the agent's transcript turns
    failed = _failed_turn(h.name, h.obj) if h.agent_id else None
    if failed is not None and (ev.last_turn is None or (ts, failed) > ev.last_turn):
        ev.last_turn = (ts, failed)


def _tool_event(state: SessionState, h: Hook, tuid: str, t: Touched) -> None:
    """PreToolUse / PostToolUse / PostToolUseFailure: the call's start or end; a spawn tool's input
    and the child its result names (SPEC §4.3)."""
    st = _TOOL_STATUS[h.name]
    if h.name == "PostToolUseFailure" and h.obj.get("is_interrupt") is True:
        st = INTERRUPTED
    tool = _s(h.obj, "tool_name")
    named = h.agent_id is not None
    pid = h.prompt_id
    if st == RUNNING:
        note_tool(state, t, tuid, agent=h.agent, agent_named=named, name=tool, started=h.ts, prompt_id=pid)
    else:
        note_tool(state, t, tuid, agent=h.agent, agent_named=named, name=tool, ended=h.ts, status=st, prompt_id=pid)
    resp = h.obj.get("tool_response")
    resp = resp if isinstance(resp, dict) else {}
    if tool in SPAWN_TOOLS and h.name != "PostToolUseFailure":
        _spawn(state, tuid, h.agent, h.ts, h.obj, resp)
        t.all_agents = True
    if h.name == "PostToolUse":
        # The spawn's result names the child (SPEC §4.3; FORMATS.md §4, §7.4): corpus/hooks/
        # cka-buddy/PostToolUse.jsonl, session 11473b9f…, Task toolu_01CPvj… ->
        # tool_response.agentId a282eece383c71f91. A background run (`status: "async_launched"`,
        # `isAsync: true`: session 1577d3a9…, af4a5e4c13f90b637) names it too, but its launch is
        # no completion.
        child = resp.get("agentId")
        if isinstance(child, str) and child:
            link(state, tuid, "tool_use", child)
            if resp.get("status") != "async_launched" and resp.get("isAsync") is not True:
                note_result(state, tuid, False, None, h.ts)
            t.all_agents = True


def _permission_request(state: SessionState, h: Hook, tuid: str, t: Touched) -> None:
    """PermissionRequest with a tool_use_id: the call exists; no outcome.

    PermissionRequest carries no tool_use_id (FORMATS.md §7.2, obs + DOC; e.g.
    corpus/hooks/crypto/PermissionRequest.jsonl: tool_name "Bash", tool_input, permission_suggestions,
    no id), so this handler only serves a future version that adds one, and it asserts no outcome.
    Without an id the request is kept in the log and in `events` and is activity of its agent,
    but it never touches tool_calls: (session, tool_name, tool_input) is not an identity (the same
    command can be asked for twice in one turn), and the request says only that permission was
    asked, not how the user answered. The answer shows structurally elsewhere: a denial or
    cancellation is the transcript tool_result of that tool_use id (toolstatus.result_status),
    an allowed call its PostToolUse; a PermissionDenied hook names the id.
    """
    named = h.agent_id is not None
    note_tool(state, t, tuid, agent=h.agent, agent_named=named, name=_s(h.obj, "tool_name"), prompt_id=h.prompt_id)


def _permission_denied(state: SessionState, h: Hook, tuid: str, t: Touched) -> None:
    """PermissionDenied (auto mode's classifier refused the call; docs/claude-code.md §3): the call
    ended ``denied``, with the hook's ``reason``."""
    note_tool(
        state,
        t,
        tuid,
        agent=h.agent,
        agent_named=h.agent_id is not None,
        name=_s(h.obj, "tool_name"),
        ended=h.ts,
        status=DENIED,
        prompt_id=h.prompt_id,
        reason=_s(h.obj, "reason"),
    )


def _turn_end(state: SessionState, h: Hook) -> None:
    """Stop / StopFailure of the main agent: how its turn ended. StopFailure fires instead of Stop
    when the turn ended on an API error, typed (``error``: ``rate_limit``, ``overloaded``,
    ``billing_error``, ...; fixtures/claude-2.1.332/hooks/StopFailure.jsonl); a later Stop clears
    it. ``(receipt, kind)`` max, so the order of arrival does not matter."""
    kind = ""
    if h.name == "StopFailure":
        kind = _s(h.obj, "error") or "unknown"
    if state.turn_end is None or (h.ts, kind) > state.turn_end:
        state.turn_end = (h.ts, kind)


def _model_switch(state: SessionState, h: Hook) -> None:
    """PostModelSwitch (``from_model``, ``to_model``, ``source``: fixtures/claude-2.1.332/hooks/
    PostModelSwitch.jsonl): the session's model from then on; the latest receipt wins."""
    to = _s(h.obj, "to_model")
    if to and (state.switched_model is None or (h.ts, to) > state.switched_model):
        state.switched_model = (h.ts, to)


def _task(state: SessionState, h: Hook, t: Touched) -> None:
    """TaskCreated / TaskCompleted (``task_id``, ``task_subject``, ``task_description?``,
    ``teammate_name?``: fixtures/claude-2.1.332/hooks/TaskCreated.jsonl): one task of the session's
    list, every field a join. A body without a ``task_id`` names no task."""
    tid = _s(h.obj, "task_id")
    if tid is None:
        return
    ev = state.tasks.get(tid)
    if ev is None:
        ev = state.tasks[tid] = TaskEv()
    for key, attr in (("task_subject", "subject"), ("task_description", "description"), ("teammate_name", "teammate")):
        v = _s(h.obj, key)
        cur = getattr(ev, attr)
        if v is not None and (cur is None or v > cur):
            setattr(ev, attr, v)
    at = "created_at" if h.name == "TaskCreated" else "completed_at"
    cur_ts = getattr(ev, at)
    if cur_ts is None or h.ts < cur_ts:
        setattr(ev, at, h.ts)
    t.tasks.add(tid)


# Events whose ``teammate_name`` names a teammate of the session (agent teams; 2.1.332 bundle).
_TEAMMATE_EVENTS = frozenset(("TeammateIdle", "TaskCreated", "TaskCompleted"))

# One handler per hook event that is not plain activity of its agent.
_EVENTS: dict[str, Callable[[SessionState, Hook, Touched], EventRow]] = {
    "SessionEnd": _session_end,
    "SubagentStop": _subagent_stop,
}
# Events that also speak about one tool call (``tool_use_id``), after the activity.
_TOOL_EVENTS: dict[str, Callable[[SessionState, Hook, str, Touched], None]] = {
    "PreToolUse": _tool_event,
    "PostToolUse": _tool_event,
    "PostToolUseFailure": _tool_event,
    "PermissionRequest": _permission_request,
    "PermissionDenied": _permission_denied,
}


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
    team, name = _s(inp, "team_name"), _s(inp, "name")
    cur = state.hook_spawns.get(tuid)
    if cur is None:
        state.hook_spawns[tuid] = Spawn(agent, ts, stype, desc, prompt, team, name)
        return
    cur.team = _join(cur.team, team)
    cur.name = _join(cur.name, name)
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
