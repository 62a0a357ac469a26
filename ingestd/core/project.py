"""The projector: a pure per-session fold over log rows (SPEC §4, DESIGN.md).

``fold(state, rows)`` merges the evidence of ``rows`` (one session's, any order, any
batching) into ``state`` and returns the full projection rows of every entity the rows
touched (``ingestd.core.derive``). One handler per record kind; unknown kinds only
count as activity (FORMATS.md §1.2 "Daemon rule": the set grows in most versions).
Transcript rows and hook rows go through the same fold.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ingestd.core import derive
from ingestd.core.decode import decode_line
from ingestd.core.hookfold import fold_hook
from ingestd.core.oversized import OVERSIZED, salvage
from ingestd.core.records import LogRow, path_info
from ingestd.core.state import (
    LEGACY_PREFIX,
    RANK_COPY,
    RANK_MAIN,
    RANK_SIDECHAIN,
    SPAWN_TOOLS,
    SessionState,
    Spawn,
)
from ingestd.core.toolstatus import END, result_status, spawn_cause, synthetic_kind, user_kind
from ingestd.core.touch import Ctx, Touched, agent_ev, link, note_result, note_title, note_tool
from ingestd.core.validate import (
    INFER,
    MAX_TOKENS,
    STORAGE_MARKER,
    TOKENS,
    Quarantined,
    note_time,
    storage_quarantine,
    usage_problems,
    valid_time,
)

ACTIVITY_TYPES = frozenset(("user", "assistant", "system", "progress", "attachment"))
SYNTHETIC = "<synthetic>"


def ts_of(obj: dict[str, Any], fallback: str) -> str:
    """The record's canonical timestamp when it is an instant the guards admit, else ``fallback``."""
    c = valid_time(obj.get("timestamp"))
    return c if c is not None else fallback


# A counter beyond MAX_TOKENS (1e30, 400 digits) cannot be bound at all and once aborted the
# whole batch; like any other counter that is not a count (a string, negative, null) it counts
# 0, and a record holding one is quarantined (``validate.usage_problems``).


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_TOKENS else 0


def usage_buckets(usage: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """(input, output, cache_read, cache_write_5m, cache_write_1h) of one usage object.

    The 5-minute bucket takes ``ephemeral_5m`` plus whatever of the aggregate
    ``cache_creation_input_tokens`` the breakdown does not explain (5 min is the API's
    default TTL; 1.0.48 / 1.0.65 records have no breakdown at all, e.g.
    ``corpus/claude-projects/-Users-user-projects-agents-v3/c44afee0-….jsonl``). The billed
    write total is the larger of the aggregate and the breakdown (FORMATS.md §3, CL 2.1.152:
    the aggregate was once reported 0 while the breakdown was not). ``iterations[]`` repeats
    the same numbers and is never added.
    """
    cc = usage.get("cache_creation")
    e5 = e1 = 0
    if isinstance(cc, dict):
        e5 = _int(cc.get("ephemeral_5m_input_tokens"))
        e1 = _int(cc.get("ephemeral_1h_input_tokens"))
    agg = _int(usage.get("cache_creation_input_tokens"))
    rest = agg - e5 - e1
    return (
        _int(usage.get("input_tokens")),
        _int(usage.get("output_tokens")),
        _int(usage.get("cache_read_input_tokens")),
        e5 + (rest if rest > 0 else 0),
        e1,
    )


def _merge_usage(
    state: SessionState, mid: str, rank: int, msg: dict[str, Any], ts: str, agent: str, t: Touched
) -> None:
    """Fold one part of a message (SPEC §4.4): per-bucket maximum over streamed parts.

    ``ts`` is ``validate.INFER`` for a part whose timestamp is refused (``t.bad_at`` says where
    it is): the message's ``occurred_at`` is then inferred at derive time unless another part's
    timestamp is valid (the earliest valid part wins, as always).
    """
    usage = msg.get("usage")
    if not isinstance(usage, dict):
        return
    row = t.row
    probs = usage_problems(usage)
    if probs and row is not None:
        detail = "; ".join(probs) + " is not a token count: counted as 0"
        t.quarantined.append(Quarantined(row.id, TOKENS, state.session_id, row.origin, row.origin_offset, detail[:400]))
    if ts == INFER and t.bad_at is not None:
        og, off, received_at = t.bad_at
        state.inferred.setdefault(mid, {})[(og, off)] = received_at
        state.bad_ts.setdefault(og, {})[off] = mid
    b = usage_buckets(usage)
    model = msg.get("model")
    model = model if isinstance(model, str) and model else "unknown"
    # price dimensions (SPEC §5.1): `speed` ("fast": Opus 4.6 fast mode), and the web search server
    # tool's request count, which streamed parts repeat: the maximum over parts, once per message
    sp = usage.get("speed")
    speed = sp if isinstance(sp, str) else ""
    stu = usage.get("server_tool_use")
    searches = _int(stu.get("web_search_requests")) if isinstance(stu, dict) else 0
    by_rank = state.msgs.get(mid)
    if by_rank is None:
        by_rank = state.msgs[mid] = {}
    ev = by_rank.get(rank)
    if ev is None:
        by_rank[rank] = [b[0], b[1], b[2], b[3], b[4], (b[1], model), ts, agent, speed, searches]
    else:
        if speed > ev[8]:
            ev[8] = speed
        if searches > ev[9]:
            ev[9] = searches
        for i in range(5):
            if b[i] > ev[i]:
                ev[i] = b[i]
        # the model is the one on the part with the largest output (ties: larger id)
        if (b[1], model) > ev[5]:
            ev[5] = (b[1], model)
        if ts < ev[6]:
            ev[6] = ts
        if agent < ev[7]:
            ev[7] = agent
    t.msgs.add(mid)
    if agent.startswith(LEGACY_PREFIX):
        state.legacy_msgs.add(mid)


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
        _merge_usage(state, mid, rank, msg, ts, agent, t)
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


def _compaction_key(c: tuple[Any, ...]) -> tuple[str, str, str, int]:
    return (c[1], c[0], c[2] or "", -1 if c[3] is None else c[3])


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


def _record(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched) -> None:
    etype = row.event_type
    if etype in (OVERSIZED, "invalid"):
        # what ``oversized.salvage`` recovered of a line past max_line_bytes; or a line logged
        # invalid by an older decoder that decodes now (a leading BOM): its record type
        v = obj.get("type")
        etype = v if isinstance(v, str) and v else "untyped"
    pi = path_info(row.origin)
    if pi.project_slug and (state.project_slug is None or (0, pi.project_slug) < state.project_slug):
        state.project_slug = (0, pi.project_slug)
    if etype == "summary":
        s = obj.get("summary")
        leaf = obj.get("leafUuid")
        # 1.0.x: `{"type":"summary","summary":…,"leafUuid":…}` (no timestamp), e.g.
        # corpus/claude-projects/-Users-user-linear-agent/263940d8-….jsonl line 1, whose leaf (line
        # 141) is a record of the previous session 998db3cd-…: the summary is that session's title,
        # not this file's. Kept by its place in the log; ``ingestd.store.titles`` finds the leaf.
        if isinstance(s, str) and s and isinstance(leaf, str) and leaf:
            where = (row.origin, row.origin_gen, row.origin_offset if row.origin_offset is not None else -1)
            state.summaries[where] = (leaf, s)
            t.summaries.add(where)
        t.session = True
        return
    if etype in ("custom-title", "ai-title"):
        # `{"type":"custom-title","customTitle":…,"sessionId":…}` (`/rename`) and
        # `{"type":"ai-title","aiTitle":…,"sessionId":…}`, no timestamp: the latest by place in the log
        v = obj.get("customTitle" if etype == "custom-title" else "aiTitle")
        if isinstance(v, str) and v:
            note_title(state, etype, (row.origin_gen, row.origin_offset or 0, row.origin), v)
        t.session = True
        return
    if etype == "queue-operation":
        _queue(state, obj, t)
    ts = note_time(state, row, obj, t)
    if etype not in ACTIVITY_TYPES:
        return
    # Which agent: the record's agentId (2.0.60+ sidechain files); a 1.0.x in-file sidechain
    # record (isSidechain, no agentId: corpus/claude-projects/-Users-user-linear-agent/
    # 263940d8-….jsonl, 378 records) resolves later through its root; else the file's agent;
    # else the session's main agent.
    aid = obj.get("agentId")
    uuid = obj.get("uuid")
    sidechain = obj.get("isSidechain") is True
    if isinstance(aid, str) and aid:
        agent = aid
    elif sidechain and pi.agent_id is None and isinstance(uuid, str):
        agent = LEGACY_PREFIX + uuid
        parent = obj.get("parentUuid")
        state.legacy_parent[uuid] = parent if isinstance(parent, str) else None
        state.legacy_ts[uuid] = ts
        if parent is None and etype == "user":
            m = obj.get("message")
            p = _text_of(m.get("content")) if isinstance(m, dict) else None
            if p is not None:
                state.legacy_prompt[uuid] = p
        t.legacy = True
    elif pi.agent_id is not None:
        agent = pi.agent_id
    else:
        agent = state.session_id
    main = agent == state.session_id
    rank = RANK_MAIN if main and not sidechain else RANK_SIDECHAIN
    _meta(state, obj, ts, rank)
    if state.first_ts is None or ts < state.first_ts:
        state.first_ts = ts
    if state.last_ts is None or ts > state.last_ts:
        state.last_ts = ts
    t.session = True
    status = "working"
    kind: str | None = None
    if etype == "assistant":
        used_tool = _assistant(state, obj, INFER if t.bad_at is not None else ts, agent, rank, t)
        if not used_tool and main:
            # a main-thread reply that calls no tool ends the turn: the agent waits for the user
            status = "waiting"
        kind = _assistant_kind(obj, used_tool)
    elif etype == "user":
        kind = _user(state, obj, ts, agent, t)
    elif etype == "progress":
        _progress(state, obj, ts, t)
    elif etype == "system" and obj.get("subtype") == "compact_boundary":
        cm = obj.get("compactMetadata")
        cm = cm if isinstance(cm, dict) else {}
        trig = cm.get("trigger") if cm.get("trigger") in ("auto", "manual") else None
        pre_v = cm.get("preTokens")
        pre = pre_v if isinstance(pre_v, int) and not isinstance(pre_v, bool) and 0 <= pre_v <= MAX_TOKENS else None
        if isinstance(uuid, str):
            comp = (agent, ts, trig, pre)
            cur = state.compactions.get(uuid)
            # the same boundary record read twice: a join (the smaller description), not the last read
            if cur is None or _compaction_key(comp) < _compaction_key(cur):
                state.compactions[uuid] = comp
            t.compactions.add(uuid)
    if agent.startswith(LEGACY_PREFIX):
        return
    ev = agent_ev(state, agent)
    ev.ran = True
    if etype == "assistant":
        ev.has_assistant = True
    if ev.first_ts is None or ts < ev.first_ts:
        ev.first_ts = ts
    if ev.last_ts is None or ts > ev.last_ts:
        ev.last_ts = ts
    if etype in ("user", "assistant", "system") and (ev.latest is None or (ts, status) > ev.latest):
        ev.latest = (ts, status)
    if kind is not None and (ev.last_turn is None or (ts, kind) > ev.last_turn):
        ev.last_turn = (ts, kind)
    if not main and obj.get("parentUuid") is None and etype == "user":
        m = obj.get("message")
        p = _text_of(m.get("content")) if isinstance(m, dict) else None
        if p is not None and (ev.root_prompt is None or (ts, p) < ev.root_prompt):
            ev.root_prompt = (ts, p)
            t.all_agents = True
    t.agents.add(agent)


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


def _sidecar(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched) -> None:
    """``agent-<id>.meta.json`` (2.1.x): the subagent's type when no spawn input names it."""
    aid = path_info(row.origin).agent_id
    at = obj.get("agentType")
    if aid and isinstance(at, str) and at:
        ev = agent_ev(state, aid)
        if ev.meta_type is None or at > ev.meta_type:
            ev.meta_type = at
        t.agents.add(aid)


def decode_row(row: LogRow) -> dict[str, Any] | None:
    """The row's object: the one already decoded, else the payload decoded leniently (hooks too);
    for an ``oversized`` marker, the record salvaged from its kept bytes."""
    if row.obj is not None:
        return row.obj
    if row.event_type == OVERSIZED and row.source == "jsonl":
        return salvage(row.payload)
    # an `invalid` row is decoded again: the decoder may accept it now (a BOM before the object,
    # logged `invalid` before projection revision 5); still invalid, it stays skipped
    return decode_line(row.payload).obj


def fold(
    state: SessionState | None, session_id: str, rows: Iterable[LogRow], ctx: Ctx
) -> tuple[SessionState, derive.Changes]:
    """Fold one session's log rows into its state; return the state and the touched rows.

    Args:
        state: the session's state so far (None: empty). Mutated in place and returned.
        session_id: str, the session every row belongs to.
        rows: log rows of that session (any order; invalid and file_reset rows are skipped). Lines
            of every generation of a rewritten file are folded: a superseded generation's lines stay
            evidence (DESIGN.md "Rewritten files": billed calls stay billed; a fold cannot retract).
        ctx: instance / host ids stamped on edges.

    Returns:
        ``(state, changes)``: ``changes`` holds full rows for every touched entity.
    """
    if state is None:
        state = SessionState(session_id)
    t = Touched()
    for og in state.ts_origins:
        state.ts_index.setdefault(og, ([], []))
    events: list[tuple[Any, ...]] = []
    for row in rows:
        if row.source == "ingestd" and row.event_type == STORAGE_MARKER:
            q = storage_quarantine(row.id, session_id, row.origin, row.origin_offset, row.payload)
            if q is not None:
                t.quarantined.append(q)
            continue
        if row.source == "ingestd":
            continue
        obj = decode_row(row)
        if obj is None:
            continue
        t.row = row
        t.bad_at = None
        if row.source == "hook":
            ev_row = fold_hook(state, row, obj, t)
            events.append(ev_row)
        elif row.event_type == "meta":
            _sidecar(state, row, obj, t)
        else:
            _record(state, row, obj, t)
    changes = derive.derive(state, t, ctx)
    changes.events.extend(events)
    changes.quarantine.extend(q.db_tuple() for q in t.quarantined)
    return state, changes
