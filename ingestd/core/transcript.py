"""Transcript records folded into the session state (SPEC §4, FORMATS.md §1-§5), pure.

``fold_record`` normalises a record's kind and hands it to that kind's handler: ``_UNTIMED``
(records without a timestamp: summaries and titles), else its time is noted and, for the
activity kinds (``_ACTIVITY``), the record's agent is resolved and credited. Any other kind
(FORMATS.md §1.2 "Daemon rule": the set grows in most versions) is logged and its timestamp
checked, nothing more.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ingestd.core.activity import prompt_text
from ingestd.core.blocks import SYNTHETIC, assistant, progress, queue, text_of, usage_on_unbilled, user
from ingestd.core.oversized import OVERSIZED
from ingestd.core.records import LogRow, PathInfo, path_info
from ingestd.core.state import (
    LEGACY_PREFIX,
    RANK_MAIN,
    RANK_SIDECHAIN,
    CompactionEv,
    CostState,
    ModelTotals,
    SessionState,
)
from ingestd.core.toolstatus import END, synthetic_kind
from ingestd.core.touch import Touched, agent_ev, link, note_prompt, note_title
from ingestd.core.validate import INFER, MAX_TOKENS, index_time, note_time


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


def _count(v: Any) -> int | None:
    """A count Claude Code reports: an int (not bool) in ``0..MAX_TOKENS``, else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_TOKENS else None


MAX_USD = 1e12  # a reported cost past this is no cost


def _usd(v: Any) -> float | None:
    """A cost Claude Code reports: a finite number in ``0..MAX_USD`` (US dollars), else None."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) and 0 <= f <= MAX_USD else None


def _cost_state(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched) -> None:
    """A ``cost-state`` record (2.1.3xx; ../shared/live-2.1.332/projects/-home-user-proj/f062db45-….jsonl
    last line): Claude Code's own running totals of the session, ``totalCostUSD`` and per model
    ``modelUsage`` ``{inputTokens, outputTokens, cacheReadInputTokens,
    cacheCreationEphemeral5mInputTokens, cacheCreationEphemeral1hInputTokens, webSearchRequests,
    costUSD}``. No timestamp: the latest by place in the log wins (each record restates the whole
    totals). Never usage: these are Claude Code's figures, shown beside ingestd's, never added."""
    mu = obj.get("modelUsage")
    models: list[tuple[str, ModelTotals]] = []
    if isinstance(mu, dict):
        for model, u in mu.items():
            if not model or not isinstance(u, dict):
                continue
            w5 = u.get("cacheCreationEphemeral5mInputTokens")
            w1 = u.get("cacheCreationEphemeral1hInputTokens")
            if w5 is None and w1 is None:  # a total with no split is 5-minute writes (the API's default)
                w5 = u.get("cacheCreationInputTokens")
                w1 = 0 if _count(w5) is not None else None
            models.append(
                (
                    model,
                    ModelTotals(
                        _count(u.get("inputTokens")),
                        _count(u.get("outputTokens")),
                        _count(u.get("cacheReadInputTokens")),
                        _count(w5),
                        _count(w1),
                        _count(u.get("webSearchRequests")),
                        _usd(u.get("costUSD")),
                    ),
                )
            )
    total = _usd(obj.get("totalCostUSD"))
    if total is None and not models:
        return
    cs = CostState((row.origin_gen, row.origin_offset or 0, row.origin), total, tuple(sorted(models)))
    if state.cost_state is None or cs > state.cost_state:
        state.cost_state = cs
    state.cost_models.update(m for m, _ in models)
    t.cost_state = True


def _last_prompt(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched) -> None:
    """A ``last-prompt`` record (2.1.3xx): ``{lastPrompt, leafUuid}``, the text of the session's
    latest prompt; no timestamp, so the latest by place in the log wins."""
    v = obj.get("lastPrompt")
    if isinstance(v, str) and v.strip():
        cur = ((row.origin_gen, row.origin_offset or 0, row.origin), v)
        if state.last_prompt is None or cur > state.last_prompt:
            state.last_prompt = cur


# Records without a timestamp: folded and done (they are no activity).
_UNTIMED: dict[str, Callable[[SessionState, LogRow, dict[str, Any], Touched], None]] = {
    "cost-state": _cost_state,
    "last-prompt": _last_prompt,
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
    ts = note_time(state, row, obj, t, kind in _ACTIVITY)
    if kind == "queue-operation":
        queue(state, obj, ts, t)
    handler = _ACTIVITY.get(kind)
    if handler is None:
        usage_on_unbilled(state, obj, t)
        return
    act = _activity(state, row, obj, kind, ts, pi, t)
    status, turn = handler(state, act, t)
    if not act.agent.startswith(LEGACY_PREFIX):
        _credit(state, act, status, turn, t)


def index_record(state: SessionState, row: LogRow, obj: dict[str, Any]) -> None:
    """Index a transcript record's valid timestamp as ``fold_record`` would note it (a refold's
    first pass, ``projector.fold``): every kind but the untimed ones."""
    if _kind(row, obj) not in _UNTIMED:
        index_time(state, row, obj)


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
            p = text_of(m.get("content")) if isinstance(m, dict) else None
            if p is not None:
                state.legacy_prompt[uuid] = p
        t.legacy = True
        return LEGACY_PREFIX + uuid
    return pi.agent_id if pi.agent_id is not None else state.session_id


def _activity(
    state: SessionState, row: LogRow, obj: dict[str, Any], kind: str, ts: str, pi: PathInfo, t: Touched
) -> Act:
    """Resolve the record's agent, merge its session fields and times; the record's ``Act``."""
    agent = _record_agent(state, obj, kind, ts, pi, t)
    main = agent == state.session_id
    rank = RANK_MAIN if main and obj.get("isSidechain") is not True else RANK_SIDECHAIN
    _meta(state, obj, ts, rank)
    _fork_evidence(state, row, obj, pi, main)
    pid = obj.get("promptId")  # 2.1.196+: the prompt whose turn this record is (main and subagent files)
    if isinstance(pid, str) and pid:
        pos = obj.get("turnPosition")
        index = _count(pos.get("promptIndex")) if isinstance(pos, dict) else None
        note_prompt(state, t, pid, ts, index=index, text=prompt_text(obj) if main and kind == "user" else None)
    # a record without a timestamp never moves the session's activity, nor an undated one
    if not t.untimed and not t.undated:
        if state.first_ts is None or ts < state.first_ts:
            state.first_ts = ts
        if state.last_ts is None or ts > state.last_ts:
            state.last_ts = ts
    t.session = True
    return Act(obj, kind, ts, agent, main, rank)


def _fork_evidence(state: SessionState, row: LogRow, obj: dict[str, Any], pi: PathInfo, main: bool) -> None:
    """What a record says of the session a fork came from (DESIGN.md "Forks"): the first root of
    the main file (a record with a uuid and ``"parentUuid": null``: ``--fork-session`` copies the
    parent's chain from its root, uuids kept; ../shared/live-2.1.332 has none, fixtures/
    claude-2.1.332/fork the run) and ``forkedFrom.sessionId`` (``/branch`` stamps its copies, 2.1.332
    bundle). Both are joins: the smallest place, the smallest id. The main file's ``teamName`` /
    ``agentName`` (a team member's records carry them, 2.1.332 bundle) are kept the same way: a
    teammate run in its own terminal is a session of its own (DESIGN.md "Teammates")."""
    uuid = obj.get("uuid")
    if main and pi.agent_id is None and "parentUuid" in obj and obj["parentUuid"] is None and isinstance(uuid, str):
        root = ((row.origin_gen, row.origin_offset or 0, row.origin), uuid)
        if uuid and (state.root is None or root < state.root):
            state.root = root
    if main and pi.agent_id is None:
        team, name = obj.get("teamName"), obj.get("agentName")
        if isinstance(team, str) and team and (state.team_name is None or team < state.team_name):
            state.team_name = team
        if isinstance(name, str) and name and (state.agent_name is None or name < state.agent_name):
            state.agent_name = name
    ff = obj.get("forkedFrom")
    v = ff.get("sessionId") if isinstance(ff, dict) else None
    parent = v if isinstance(v, str) and v and v != state.session_id else None
    if parent is not None and (state.forked_from is None or parent < state.forked_from):
        state.forked_from = parent


def _on_assistant(state: SessionState, a: Act, t: Touched) -> tuple[str, str | None]:
    """Usage, spawns, tool starts; a main-thread reply that calls no tool ends the turn: the agent
    waits for the user."""
    used_tool = assistant(state, a.obj, INFER if t.bad_at is not None else a.ts, a.agent, a.rank, t)
    return ("waiting" if not used_tool and a.main else "working"), _assistant_kind(a.obj, used_tool)


def _on_user(state: SessionState, a: Act, t: Touched) -> tuple[str, str | None]:
    return "working", user(state, a.obj, a.ts, a.agent, t)


def _on_progress(state: SessionState, a: Act, t: Touched) -> tuple[str, str | None]:
    progress(state, a.obj, a.ts, t)
    return "working", None


def _compaction_key(c: CompactionEv) -> tuple[str, str, str, int]:
    return (c.ts, c.agent, c.trigger or "", -1 if c.pre_tokens is None else c.pre_tokens)


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
    if not t.undated:  # an undated record has no time to be activity or status evidence at
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
        p = text_of(m.get("content")) if isinstance(m, dict) else None
        if p is not None and (ev.root_prompt is None or (a.ts, p) < ev.root_prompt):
            ev.root_prompt = (a.ts, p)
            t.all_agents = True
    t.agents.add(a.agent)


def _assistant_kind(obj: dict[str, Any], used_tool: bool) -> str:
    msg = obj.get("message")
    if isinstance(msg, dict) and msg.get("model") == SYNTHETIC:
        return synthetic_kind(obj.get("error"), obj.get("isApiErrorMessage") is True, text_of(msg.get("content")) or "")
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
    """``agent-<id>.meta.json`` (2.1.x; docs/claude-code.md §5.2): what the subagent says of its spawn.

    ``toolUseId`` (2.1.332 writes it; older sidecars lack it) names the spawning call: a link of
    provenance ``sidecar``, the strongest (``state.EDGE_RANK``), so two parallel spawns with one
    prompt each get their own agent. ``agentType``, ``description`` and ``name`` fill what no spawn
    input says. ``"finished": true`` (the rewrite at the agent's end) is stop evidence, as a
    SubagentStop. Every field is a join: the spawn-time file and its rewrite fold to one state in
    either order.
    """
    aid = path_info(row.origin).agent_id
    if not aid:
        return
    ev = agent_ev(state, aid)
    for key, attr in (("agentType", "meta_type"), ("description", "meta_desc"), ("name", "name")):
        v = obj.get(key)
        cur = getattr(ev, attr)
        if isinstance(v, str) and v and (cur is None or v > cur):
            setattr(ev, attr, v)
    tuid = obj.get("toolUseId")
    if isinstance(tuid, str) and tuid:
        link(state, tuid, "sidecar", aid)
        t.all_agents = True
    if obj.get("finished") is True:
        ev.completed = True
    t.agents.add(aid)
