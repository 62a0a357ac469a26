"""Transcript records folded into the session state (SPEC §4, FORMATS.md §1-§5), pure.

``fold_record`` normalises a record's kind and hands it to that kind's handler: ``_UNTIMED``
(records without a timestamp: summaries and titles), else its time is noted and, for the
activity kinds (``_ACTIVITY``), the record's agent is resolved and credited. Unknown kinds only
count as activity of the session's time (FORMATS.md §1.2 "Daemon rule": the set grows in most
versions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ingestd.core.oversized import OVERSIZED
from ingestd.core.records import LogRow, PathInfo, path_info
from ingestd.core.state import (
    LEGACY_PREFIX,
    RANK_COPY,
    RANK_MAIN,
    RANK_SIDECHAIN,
    SPAWN_TOOLS,
    CompactionEv,
    SessionState,
    Spawn,
)
from ingestd.core.toolstatus import END, result_status, spawn_cause, synthetic_kind, user_kind
from ingestd.core.touch import Touched, agent_ev, link, note_result, note_title, note_tool
from ingestd.core.usagefold import merge_usage
from ingestd.core.validate import INFER, MAX_TOKENS, note_time, valid_time

SYNTHETIC = "<synthetic>"


def ts_of(obj: dict[str, Any], fallback: str) -> str:
    """The record's canonical timestamp when it is an instant the guards admit, else ``fallback``."""
    c = valid_time(obj.get("timestamp"))
    return c if c is not None else fallback


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                return str(b["text"])
    return None


def _assistant(state: SessionState, obj: dict[str, Any], ts: str, agent: str, rank: int, t: Touched) -> bool:
    """Usage, spawns and tool starts of one assistant record; returns whether it used a tool.

    ``ts`` may be ``validate.INFER`` (the record's timestamp is refused): usage takes it as is,
    everything else the read time.
    """
    msg = obj.get("message")
    if not isinstance(msg, dict):
        return False
    mid = msg.get("id")
    # `<synthetic>` turns are API error placeholders with zero usage: never a billed message
    # (corpus/claude-projects/-Users-user-rcconsultech-task-api-benchmark-v0-2/agent-4ed9b522.jsonl).
    if isinstance(mid, str) and mid and msg.get("model") != SYNTHETIC:
        merge_usage(state, mid, rank, msg, ts, agent, t)
    if ts == INFER and t.row is not None:
        ts = t.row.received_at
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

            sp = Spawn(agent, ts, s("subagent_type"), s("description"), s("prompt"))
            cur = state.spawns.get(tuid)
            # one tool_use id read twice (a record repeated in two files): the earliest record wins
            if cur is None or _spawn_key(sp) < _spawn_key(cur):
                state.spawns[tuid] = sp
            t.all_agents = True
    return used_tool


def _spawn_key(sp: Spawn) -> tuple[str, str, str, str, str]:
    return (sp.ts, sp.agent, sp.subagent_type or "", sp.description or "", sp.prompt or "")


def _compaction_key(c: CompactionEv) -> tuple[str, str, str, int]:
    return (c.ts, c.agent, c.trigger or "", -1 if c.pre_tokens is None else c.pre_tokens)


def _user(state: SessionState, obj: dict[str, Any], ts: str, agent: str, t: Touched) -> str:
    """Tool results, spawn results and the child agent they name; returns the turn's kind."""
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return user_kind(content if isinstance(content, str) else None, [])
    statuses: list[int] = []
    tur = obj.get("toolUseResult")
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        tuid = block.get("tool_use_id")
        if not isinstance(tuid, str):
            continue
        is_error = block.get("is_error") is True
        text = _text_of(block.get("content")) or ""
        st = result_status(is_error, text)
        statuses.append(st)
        note_tool(state, t, tuid, agent=agent, ended=ts, status=st)
        async_launch = isinstance(tur, dict) and (tur.get("status") == "async_launched" or tur.get("isAsync") is True)
        if not async_launch:
            note_result(state, tuid, is_error, spawn_cause(text) if is_error else None, ts)
        # 2.1.14+: the spawn's result names the child (toolUseResult.agentId), e.g.
        # corpus/claude-projects/-tmp-tmpqwh7888i/c7d3d95c-….jsonl line 4 -> ab81802.
        if isinstance(tur, dict):
            child = tur.get("agentId")
            if isinstance(child, str) and child:
                link(state, tuid, "tool_use", child)
        t.all_agents = True
    return user_kind(_text_of(content), statuses)


def _progress(state: SessionState, obj: dict[str, Any], ts: str, t: Touched) -> None:
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
            _assistant(state, inner, ts_of(inner, ts), child, RANK_COPY, t)


def _queue(state: SessionState, obj: dict[str, Any], t: Touched) -> None:
    """A ``<task-notification>`` enqueued for a background agent names task id and tool use id.

    corpus/claude-projects/-Users-user-Documents-cka-buddy/7da73774-….jsonl lines 20-21:
    ``<task-id>a59e84c40dbe09dd4</task-id><tool-use-id>toolu_…</tool-use-id>…<status>completed``.
    """
    content = obj.get("content")
    if obj.get("operation") != "enqueue" or not isinstance(content, str):
        return
    if not content.startswith("<task-notification>"):
        return
    task = _tag(content, "task-id")
    tuid = _tag(content, "tool-use-id")
    status = _tag(content, "status")
    if task and tuid:
        link(state, tuid, "task_notification", task)
        if status:
            prev = state.notified.get(task)
            state.notified[task] = max(prev, status) if prev else status
        t.all_agents = True


def _tag(text: str, name: str) -> str | None:
    start = text.find(f"<{name}>")
    if start < 0:
        return None
    start += len(name) + 2
    end = text.find(f"</{name}>", start)
    return text[start:end].strip() if end > start else None


def _kind(row: LogRow, obj: dict[str, Any]) -> str:
    """The record's kind: the row's ``event_type``, or for a row logged ``oversized`` (what
    ``oversized.salvage`` recovered of a line past max_line_bytes) or ``invalid`` (a line an
    older decoder refused that decodes now: a leading BOM) the record's own ``type``."""
    if row.event_type not in (OVERSIZED, "invalid"):
        return row.event_type
    v = obj.get("type")
    return v if isinstance(v, str) and v else "untyped"


def _summary(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched) -> None:
    """A 1.0.x ``summary`` record, kept by its place in the log (the store finds its leaf).

    `{"type":"summary","summary":…,"leafUuid":…}` (no timestamp), e.g.
    corpus/claude-projects/-Users-user-linear-agent/263940d8-….jsonl line 1, whose leaf (line
    141) is a record of the previous session 998db3cd-…: the summary is that session's title,
    not this file's (``ingestd.store.titles``).
    """
    s = obj.get("summary")
    leaf = obj.get("leafUuid")
    if isinstance(s, str) and s and isinstance(leaf, str) and leaf:
        where = (row.origin, row.origin_gen, row.origin_offset if row.origin_offset is not None else -1)
        state.summaries[where] = (leaf, s)
        t.summaries.add(where)


def _title(kind: str, field: str) -> Callable[[SessionState, LogRow, dict[str, Any], Touched], None]:
    """The handler of a title record of ``kind`` whose text is ``obj[field]``: no timestamp, so the
    latest by place in the log (generation, offset, origin) wins."""

    def fold_title(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched) -> None:
        v = obj.get(field)
        if isinstance(v, str) and v:
            note_title(state, kind, (row.origin_gen, row.origin_offset or 0, row.origin), v)

    return fold_title


# Records without a timestamp: folded and done (they are no activity).
_UNTIMED: dict[str, Callable[[SessionState, LogRow, dict[str, Any], Touched], None]] = {
    "summary": _summary,
    # `{"type":"custom-title","customTitle":…,"sessionId":…}` (`/rename`)
    "custom-title": _title("custom-title", "customTitle"),
    # `{"type":"ai-title","aiTitle":…,"sessionId":…}`
    "ai-title": _title("ai-title", "aiTitle"),
}


@dataclass(frozen=True, slots=True)
class Act:
    """One activity record as its handler sees it.

    Attributes:
        obj: the record; kind: str, its kind; ts: str, its time (``note_time``).
        agent: str, the agent whose activity it is (a ``LEGACY_PREFIX`` placeholder for a 1.0.x
            in-file sidechain record). main: bool, that agent is the session's main agent.
        rank: int, ``RANK_MAIN`` or ``RANK_SIDECHAIN``: the claim rank of its usage.
    """

    obj: dict[str, Any]
    kind: str
    ts: str
    agent: str
    main: bool
    rank: int


def fold_record(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched) -> None:
    """Fold one transcript record (any kind) into ``state``; note what it touched in ``t``."""
    kind = _kind(row, obj)
    pi = path_info(row.origin)
    if pi.project_slug and (state.project_slug is None or (0, pi.project_slug) < state.project_slug):
        state.project_slug = (0, pi.project_slug)
    untimed = _UNTIMED.get(kind)
    if untimed is not None:
        untimed(state, row, obj, t)
        t.session = True
        return
    if kind == "queue-operation":
        _queue(state, obj, t)
    ts = note_time(state, row, obj, t)
    handler = _ACTIVITY.get(kind)
    if handler is None:
        return
    act = _activity(state, obj, kind, ts, pi, t)
    status, turn = handler(state, act, t)
    if not act.agent.startswith(LEGACY_PREFIX):
        _credit(state, act, status, turn, t)


def _record_agent(state: SessionState, obj: dict[str, Any], kind: str, ts: str, pi: PathInfo, t: Touched) -> str:
    """Which agent a record belongs to: its agentId (2.0.60+ sidechain files); a 1.0.x in-file
    sidechain record (isSidechain, no agentId: corpus/claude-projects/-Users-user-linear-agent/
    263940d8-….jsonl, 378 records) resolves later through its root (noted here); else the file's
    agent; else the session's main agent."""
    aid = obj.get("agentId")
    uuid = obj.get("uuid")
    if isinstance(aid, str) and aid:
        return aid
    if obj.get("isSidechain") is True and pi.agent_id is None and isinstance(uuid, str):
        parent = obj.get("parentUuid")
        state.legacy_parent[uuid] = parent if isinstance(parent, str) else None
        state.legacy_ts[uuid] = ts
        if parent is None and kind == "user":
            m = obj.get("message")
            p = _text_of(m.get("content")) if isinstance(m, dict) else None
            if p is not None:
                state.legacy_prompt[uuid] = p
        t.legacy = True
        return LEGACY_PREFIX + uuid
    return pi.agent_id if pi.agent_id is not None else state.session_id


def _activity(state: SessionState, obj: dict[str, Any], kind: str, ts: str, pi: PathInfo, t: Touched) -> Act:
    """Resolve the record's agent, merge its session fields and times; the record's ``Act``."""
    agent = _record_agent(state, obj, kind, ts, pi, t)
    main = agent == state.session_id
    rank = RANK_MAIN if main and obj.get("isSidechain") is not True else RANK_SIDECHAIN
    _meta(state, obj, ts, rank)
    if state.first_ts is None or ts < state.first_ts:
        state.first_ts = ts
    if state.last_ts is None or ts > state.last_ts:
        state.last_ts = ts
    t.session = True
    return Act(obj, kind, ts, agent, main, rank)


def _on_assistant(state: SessionState, a: Act, t: Touched) -> tuple[str, str | None]:
    """Usage, spawns, tool starts; a main-thread reply that calls no tool ends the turn: the agent
    waits for the user."""
    used_tool = _assistant(state, a.obj, INFER if t.bad_at is not None else a.ts, a.agent, a.rank, t)
    return ("waiting" if not used_tool and a.main else "working"), _assistant_kind(a.obj, used_tool)


def _on_user(state: SessionState, a: Act, t: Touched) -> tuple[str, str | None]:
    return "working", _user(state, a.obj, a.ts, a.agent, t)


def _on_progress(state: SessionState, a: Act, t: Touched) -> tuple[str, str | None]:
    _progress(state, a.obj, a.ts, t)
    return "working", None


def _on_system(state: SessionState, a: Act, t: Touched) -> tuple[str, str | None]:
    """A ``compact_boundary`` system record is a compaction; any other is plain activity."""
    uuid = a.obj.get("uuid")
    if a.obj.get("subtype") != "compact_boundary" or not isinstance(uuid, str):
        return "working", None
    cm = a.obj.get("compactMetadata")
    cm = cm if isinstance(cm, dict) else {}
    trig = cm.get("trigger") if cm.get("trigger") in ("auto", "manual") else None
    pre_v = cm.get("preTokens")
    pre = pre_v if isinstance(pre_v, int) and not isinstance(pre_v, bool) and 0 <= pre_v <= MAX_TOKENS else None
    comp = CompactionEv(a.agent, a.ts, trig, pre)
    cur = state.compactions.get(uuid)
    # the same boundary record read twice: a join (the smaller description), not the last read
    if cur is None or _compaction_key(comp) < _compaction_key(cur):
        state.compactions[uuid] = comp
    t.compactions.add(uuid)
    return "working", None


def _on_attachment(state: SessionState, a: Act, t: Touched) -> tuple[str, str | None]:
    return "working", None


# Activity kinds: each handler folds what its kind says beyond activity and returns the agent's
# status evidence and the turn's kind (``toolstatus.turn_kind``, None: no turn).
_ACTIVITY: dict[str, Callable[[SessionState, Act, Touched], tuple[str, str | None]]] = {
    "user": _on_user,
    "assistant": _on_assistant,
    "system": _on_system,
    "progress": _on_progress,
    "attachment": _on_attachment,
}
_STATUS_KINDS = frozenset(("user", "assistant", "system"))  # kinds whose activity is status evidence


def _credit(state: SessionState, a: Act, status: str, turn: str | None, t: Touched) -> None:
    """Credit the record to its agent: times, status evidence, last turn, first prompt."""
    ev = agent_ev(state, a.agent)
    ev.ran = True
    if a.kind == "assistant":
        ev.has_assistant = True
    if ev.first_ts is None or a.ts < ev.first_ts:
        ev.first_ts = a.ts
    if ev.last_ts is None or a.ts > ev.last_ts:
        ev.last_ts = a.ts
    if a.kind in _STATUS_KINDS and (ev.latest is None or (a.ts, status) > ev.latest):
        ev.latest = (a.ts, status)
    if turn is not None and (ev.last_turn is None or (a.ts, turn) > ev.last_turn):
        ev.last_turn = (a.ts, turn)
    if not a.main and a.obj.get("parentUuid") is None and a.kind == "user":
        m = a.obj.get("message")
        p = _text_of(m.get("content")) if isinstance(m, dict) else None
        if p is not None and (ev.root_prompt is None or (a.ts, p) < ev.root_prompt):
            ev.root_prompt = (a.ts, p)
            t.all_agents = True
    t.agents.add(a.agent)


def _assistant_kind(obj: dict[str, Any], used_tool: bool) -> str:
    msg = obj.get("message")
    if isinstance(msg, dict) and msg.get("model") == SYNTHETIC:
        return synthetic_kind(
            obj.get("error"), obj.get("isApiErrorMessage") is True, _text_of(msg.get("content")) or ""
        )
    return "tool" if used_tool else END


def _meta(state: SessionState, obj: dict[str, Any], ts: str, rank: int) -> None:
    cwd = obj.get("cwd")
    if isinstance(cwd, str) and cwd:
        c = (0 if rank == RANK_MAIN else 1, ts, cwd)
        if state.cwd is None or c < state.cwd:
            state.cwd = c
    for key, attr in (("gitBranch", "git_branch"), ("version", "version"), ("slug", "slug")):
        v = obj.get(key)
        if isinstance(v, str) and v:
            cur = getattr(state, attr)
            if cur is None or (ts, v) > cur:
                setattr(state, attr, (ts, v))
    ep = obj.get("entrypoint")
    if isinstance(ep, str) and ep and (state.entrypoint is None or (ts, ep) > state.entrypoint):
        state.entrypoint = (ts, ep)


def sidecar(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched) -> None:
    """``agent-<id>.meta.json`` (2.1.x): the subagent's type when no spawn input names it."""
    aid = path_info(row.origin).agent_id
    at = obj.get("agentType")
    if aid and isinstance(at, str) and at:
        ev = agent_ev(state, aid)
        if ev.meta_type is None or at > ev.meta_type:
            ev.meta_type = at
        t.agents.add(aid)
