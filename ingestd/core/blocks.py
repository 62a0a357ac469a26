"""The content of transcript records folded into the session state (SPEC §4.3-§4.5), pure.

An assistant record's usage and ``tool_use`` blocks (spawns among them), a user record's
``tool_result`` blocks, an ``agent_progress`` copy, a task-notification queued for a background
agent. ``ingestd.core.transcript`` dispatches records here by kind.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ingestd.core.rows import QuarantineRow
from ingestd.core.state import RANK_COPY, SPAWN_TOOLS, SessionState, Spawn
from ingestd.core.toolstatus import result_status, spawn_cause, user_kind
from ingestd.core.touch import Touched, link, note_result, note_tool
from ingestd.core.usagefold import merge_usage, message_key, usage_buckets
from ingestd.core.validate import INFER, TOKENS, inferred_at, shorten, valid_time

SYNTHETIC = "<synthetic>"
Leaf = tuple[str, str]  # (session id, canonical UTC): a record's claim to be a summary's leaf


def ts_of(obj: dict[str, Any], fallback: str) -> str:
    """The record's canonical timestamp when it is an instant the guards admit, else ``fallback``."""
    c = valid_time(obj.get("timestamp"))
    return c if c is not None else fallback


def leaf_claim(obj: dict[str, Any] | None, session_id: str | None, received_at: str, leaf_uuid: str) -> Leaf | None:
    """A record's claim to be the leaf a ``summary`` record names (SPEC §4.1): ``(session id, the
    record's time, else ``received_at``)`` when it is the record with ``uuid`` ``leaf_uuid`` and has a
    session, else None. A summary's leaf is the smallest claim among its file's records
    (``best_leaf``), the same whatever order they arrive in; both stores apply it."""
    if obj is None or session_id is None or obj.get("uuid") != leaf_uuid:
        return None
    return (session_id, ts_of(obj, received_at))


def best_leaf(claims: Iterable[Leaf | None]) -> Leaf | None:
    """The smallest of the claims (``leaf_claim``), None when there is none."""
    return min((c for c in claims if c is not None), default=None)


def text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                return str(b["text"])
    return None


def _usage_without_id(state: SessionState, msg: dict[str, Any], t: Touched) -> None:
    """Usage on a record whose ``message.id`` is missing, null or not a string: not counted (its
    streamed parts could not be told apart, so counting each would double them), but quarantined
    (``validate.TOKENS``) instead of vanishing without a trace, as it once did."""
    usage = msg.get("usage")
    row = t.row
    if row is None or not isinstance(usage, dict) or not any(usage_buckets(usage)):
        return
    detail = f"usage on a message with id {shorten(msg.get('id'))}: not counted (no id to merge its parts by)"
    t.quarantined.append(QuarantineRow(row.id, TOKENS, state.session_id, row.origin, row.origin_offset, detail))


def usage_on_unbilled(state: SessionState, obj: dict[str, Any], t: Touched) -> None:
    """Usage on a record of no type or of a type that bills nothing (only ``assistant`` records, and
    their ``agent_progress`` copies, are billed messages): not counted, but quarantined
    (``validate.TOKENS``) so the cost answer says it is incomplete instead of leaving no trace."""
    msg = obj.get("message")
    usage = msg.get("usage") if isinstance(msg, dict) else None
    row = t.row
    if row is None or not isinstance(usage, dict) or not any(usage_buckets(usage)):
        return
    kind = obj.get("type")
    named = f"type {shorten(kind)}" if "type" in obj else "no type"
    detail = f"usage on a record of {named}: not counted (only assistant records are billed)"
    t.quarantined.append(QuarantineRow(row.id, TOKENS, state.session_id, row.origin, row.origin_offset, detail))


def assistant(state: SessionState, obj: dict[str, Any], ts: str, agent: str, rank: int, t: Touched) -> bool:
    """Usage, spawns and tool starts of one assistant record; returns whether it used a tool.

    ``ts`` may be ``validate.INFER`` (the record's timestamp is refused): usage takes it as is
    (the message's time is inferred at derive time), tool starts and spawns the record's inferred
    time (``validate.inferred_at``).
    """
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return False
    mid = msg.get("id")
    # `<synthetic>` turns are API error placeholders with zero usage: never a billed message
    # (corpus/claude-projects/-Users-user-rcconsultech-task-api-benchmark-v0-2/agent-4ed9b522.jsonl).
    if isinstance(mid, str) and mid and msg.get("model") != SYNTHETIC:
        key = message_key(state, mid, obj.get("requestId"))
        merge_usage(state, key, rank, msg, ts, agent, t)
        # what Claude Code's telemetry names the message by (``ingestd.core.otelfold``)
        for ids, field_name in ((state.req_ids, "requestId"), (state.uuids, "uuid")):
            v = obj.get(field_name)
            if isinstance(v, str) and v and (v not in ids or key < ids[v]):
                ids[v] = key
    elif msg.get("model") != SYNTHETIC:
        _usage_without_id(state, msg, t)
    if ts == INFER and t.bad_at is not None:
        ts = inferred_at(state, t.bad_at)
    used_tool = False
    content = msg.get("content")
    if rank == RANK_COPY or not isinstance(content, list):
        return False
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        tuid = block.get("id")
        if not isinstance(tuid, str):
            continue
        used_tool = True
        name = block.get("name")
        name = name if isinstance(name, str) else None
        note_tool(state, t, tuid, agent=agent, name=name, started=ts)
        if name in SPAWN_TOOLS:
            inp = block.get("input")
            inp = inp if isinstance(inp, dict) else {}

            def s(k: str, inp: dict[str, Any] = inp) -> str | None:
                v = inp.get(k)
                return v if isinstance(v, str) and v else None

            sp = Spawn(agent, ts, s("subagent_type"), s("description"), s("prompt"), s("team_name"), s("name"))
            cur = state.spawns.get(tuid)
            # one tool_use id read twice (a record repeated in two files): the earliest record wins
            if cur is None or _spawn_key(sp) < _spawn_key(cur):
                state.spawns[tuid] = sp
            t.all_agents = True
    return used_tool


def _spawn_key(sp: Spawn) -> tuple[str, str, str, str, str, str, str]:
    return (
        sp.ts,
        sp.agent,
        sp.subagent_type or "",
        sp.description or "",
        sp.prompt or "",
        sp.team or "",
        sp.name or "",
    )


def user(state: SessionState, obj: dict[str, Any], ts: str, agent: str, t: Touched) -> str:
    """Tool results, spawn results and the child agent they name; returns the turn's kind."""
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    said = text_of(content)
    if is_notice(said):
        assert said is not None
        notice(state, said, ts, t)  # a delivered notice (2.1.332: ``origin.kind: "task-notification"``)
    if obj.get("isCompactSummary") is True and said is not None:
        _compact_summary(state, obj.get("parentUuid"), said, ts, t)
    if not isinstance(content, list):
        return user_kind(content if isinstance(content, str) else None, [])
    statuses: list[int] = []
    tur = obj.get("toolUseResult")
    pid = obj.get("promptId")  # 2.1.196+: the prompt whose turn this is (= the hooks' ``prompt_id``)
    pid = pid if isinstance(pid, str) and pid else None
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        tuid = block.get("tool_use_id")
        if not isinstance(tuid, str):
            continue
        is_error = block.get("is_error") is True
        text = text_of(block.get("content")) or ""
        st = result_status(is_error, text)
        statuses.append(st)
        note_tool(state, t, tuid, agent=agent, ended=ts, status=st, prompt_id=pid)
        # a background launch is no end of the agent: its end is a task-notification (``notice``)
        async_launch = (
            isinstance(tur, dict) and (tur.get("status") == "async_launched" or tur.get("isAsync") is True)
        ) or text.startswith(ASYNC_LAUNCH_TEXT)
        if not async_launch:
            note_result(state, tuid, is_error, spawn_cause(text) if is_error else None, ts)
        # 2.1.14+: the spawn's result names the child (toolUseResult.agentId), e.g.
        # corpus/claude-projects/-tmp-tmpqwh7888i/c7d3d95c-….jsonl line 4 -> ab81802.
        if isinstance(tur, dict):
            child = tur.get("agentId")
            if isinstance(child, str) and child:
                link(state, tuid, "tool_use", child)
        t.all_agents = True
    return user_kind(said, statuses)


def _compact_summary(state: SessionState, boundary: Any, text: str, ts: str, t: Touched) -> None:
    """The summary a compaction left: the ``isCompactSummary`` user record whose ``parentUuid`` is
    the ``compact_boundary`` record (corpus/claude-projects/-home-user-projects-spotter-worktrees-
    spotter-dov/4d5611e5-….jsonl: boundary dd3cc2e6-…, its summary the next line). ``(ts, text)``
    min: the same record read twice is one summary."""
    if not isinstance(boundary, str) or not boundary:
        return
    cur = state.compact_summaries.get(boundary)
    if cur is None or (ts, text) < cur:
        state.compact_summaries[boundary] = (ts, text)
    if boundary in state.compactions:
        t.compactions.add(boundary)


def progress(state: SessionState, obj: dict[str, Any], ts: str, t: Touched) -> None:
    """``agent_progress``: a copy of a subagent record (lowest-precedence usage) + the link.

    corpus/claude-projects/-home-user-projects-spotter/491e126e-….jsonl: the subagent
    afb92ff has no file of its own; its billed calls exist only as these copies.
    """
    data = obj.get("data")
    if not isinstance(data, dict) or data.get("type") != "agent_progress":
        return
    child = data.get("agentId")
    ptu = obj.get("parentToolUseID")
    if isinstance(child, str) and child:
        if isinstance(ptu, str) and ptu:
            link(state, ptu, "tool_use", child)
            t.all_agents = True
        inner = data.get("message")
        if isinstance(inner, dict) and inner.get("type") == "assistant":
            assistant(state, inner, ts_of(inner, ts), child, RANK_COPY, t)


def queue(state: SessionState, obj: dict[str, Any], ts: str, t: Touched) -> None:
    """A ``queue-operation`` ``enqueue`` whose ``content`` is a ``<task-notification>`` (``notice``).

    corpus/claude-projects/-Users-user-Documents-cka-buddy/7da73774-….jsonl lines 20-21:
    ``<task-id>a59e84c40dbe09dd4</task-id><tool-use-id>toolu_…</tool-use-id>…<status>completed``.
    """
    content = obj.get("content")
    if obj.get("operation") == "enqueue" and isinstance(content, str):
        notice(state, content, ts, t)


NOTICE = "<task-notification>"
# The tool_result text of a background spawn (2.1.332: fixtures/claude-2.1.332/agents/
# async-agent-records.jsonl line 1), for a record whose ``toolUseResult`` is absent (a copy).
ASYNC_LAUNCH_TEXT = "Async agent launched successfully"


def is_notice(text: str | None) -> bool:
    """Whether ``text`` (a queued content, a user record's text, a UserPromptSubmit ``prompt``) is a
    ``<task-notification>``."""
    return text is not None and text.lstrip().startswith(NOTICE)


def notice(state: SessionState, text: str, ts: str, t: Touched) -> None:
    """Fold a ``<task-notification>``: the end (per ``<status>``) of the agent its ``<task-id>`` names.

    Claude Code 2.1.332 delivers one notice in three forms (a queue-operation, a ``user`` record
    with ``origin.kind: "task-notification"``, a UserPromptSubmit hook's ``prompt``: docs/claude-code.md
    §5.3); each is folded here, and they agree, so the join makes one piece of evidence. The
    ``<task-id>`` is the agentId; ``<tool-use-id>`` (newer versions only) names the spawn, an edge of
    provenance ``task_notification``. The agent's status is the newest notice's, ``(ts, status)``
    max (a resumed agent notifies again). ``<usage>`` is Claude Code's summary of the agent's
    tokens, never billed (the agent's own records are). A notice naming no agent (a background
    shell's task, an agent of a file not read) creates none: ``derive_agents.agent_row`` needs other
    evidence that it ran.

    Args:
        text: str, the notice (anything else is ignored). ts: str, canonical UTC, the carrier's time.
    """
    if not is_notice(text):
        return
    task = _tag(text, "task-id")
    if not task:
        return
    tuid = _tag(text, "tool-use-id")
    status = _tag(text, "status") or ""
    prev = state.notified.get(task)
    if prev is None or (ts, status) > prev:
        state.notified[task] = (ts, status)
    if tuid:
        link(state, tuid, "task_notification", task)
    t.agents.add(task)
    t.all_agents = True
    t.session = True


def _tag(text: str, name: str) -> str | None:
    start = text.find(f"<{name}>")
    if start < 0:
        return None
    start += len(name) + 2
    end = text.find(f"</{name}>", start)
    return text[start:end].strip() if end > start else None
