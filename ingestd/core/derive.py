"""Projection rows derived from a session's fold state (SPEC §4), pure.

Every row is a function of the merged state only, so any order or batching of the
same log rows derives the same rows (order independence, property-tested).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingestd.core.keys import stable_id
from ingestd.core.state import EDGE_RANK, LEGACY_PREFIX, TITLE_KINDS, AgentEv, SessionState, Spawn
from ingestd.core.toolstatus import END, INTERRUPTED, RUNNING, STATUSES, ending
from ingestd.core.touch import Ctx, Touched
from ingestd.core.validate import INFER, occurred_of

BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
LEGACY_AGENT = "sidechain-"  # id of a 1.0.x in-file sidechain agent: prefix + its root record's uuid
COMPACTION_PREFIX = "acompact-"
_TERMINAL = frozenset(("completed", "error"))


@dataclass(slots=True)
class Changes:
    """Full rows of touched entities, each a tuple in ``ingestd.store.writer`` column order.

    The change output of one fold is keyed by session: every row names its ``session_id``, and an
    agent is the pair ``(session_id, id)`` (SPEC §4.2, migration 0009): ``parent_agent_id``,
    an edge's endpoints and a usage / tool row's ``agent_id`` are agents of that row's session.
    A store upserts each row by its key below, later rows of one key winning (token_usage: the
    better claim wins, DESIGN.md "token_usage across sessions").

    Attributes:
        sessions (key id): (id, project_slug, project_path, started_at, last_activity_at, status,
            git_branch, cc_version, title, slug, entrypoint, end_reason, title_source); title and
            title_source (``state.TITLE_KINDS``) are None when no record of the session names one (a
            ``summary`` title is joined in by the store, ``ingestd.store.titles``)
        agents (key session_id, id): (id, session_id, type, subagent_type, status, parent_agent_id, first_seen_at,
            last_seen_at, outcome_cause, is_compaction, description)
        edges (key session_id, child_agent_id; id = stable_id(session_id, child)): (id, session_id,
            parent_agent_id, child_agent_id, source, instance, host_id,
            created_at, tool_use_id)
        token_usage (key message_id, bucket; id None): (id, session_id, agent_id, message_id, model, bucket, tokens,
            is_compaction_baseline, occurred_at, claim_rank, prompt_tokens, speed, web_search_requests):
            the last three are per message facts (migration 0011), searches on the ``output`` row only
        tool_calls (key session_id, tool_use_id): (session_id, tool_use_id, agent_id, tool_name,
            started_at, ended_at, status)
        compactions (key session_id, boundary_id): (session_id, boundary_id, agent_id, occurred_at, trigger, pre_tokens)
        events (key raw_event_id): (raw_event_id, session_id, agent_id, event_type, occurred_at)
        summaries (key origin, origin_gen, origin_offset): (origin, origin_gen, origin_offset,
            file_session, leaf_uuid, summary): the session's files' ``summary`` records, whose
            session is the one of the record ``leaf_uuid`` names (``ingestd.store.titles``)
        retracted_agents: (session_id, id) of provisional 1.0.x sidechain agents to delete, with
            the edge to them.
        quarantine (key raw_event_id, reason): (raw_event_id, reason, session_id, origin, origin_offset, detail)
    """

    sessions: list[tuple[Any, ...]] = field(default_factory=list)
    agents: list[tuple[Any, ...]] = field(default_factory=list)
    edges: list[tuple[Any, ...]] = field(default_factory=list)
    token_usage: list[tuple[Any, ...]] = field(default_factory=list)
    tool_calls: list[tuple[Any, ...]] = field(default_factory=list)
    compactions: list[tuple[Any, ...]] = field(default_factory=list)
    events: list[tuple[Any, ...]] = field(default_factory=list)
    quarantine: list[tuple[Any, ...]] = field(default_factory=list)
    summaries: list[tuple[Any, ...]] = field(default_factory=list)
    retracted_agents: list[tuple[str, str]] = field(default_factory=list)

    def extend(self, other: Changes) -> None:
        """Append ``other``'s rows (later rows of the same key win at upsert time)."""
        self.sessions.extend(other.sessions)
        self.agents.extend(other.agents)
        self.edges.extend(other.edges)
        self.token_usage.extend(other.token_usage)
        self.tool_calls.extend(other.tool_calls)
        self.compactions.extend(other.compactions)
        self.events.extend(other.events)
        self.quarantine.extend(other.quarantine)
        self.summaries.extend(other.summaries)
        self.retracted_agents.extend(other.retracted_agents)


class _Legacy:
    """Resolution of 1.0.x in-file sidechains to agents (walk ``parentUuid`` to the root).

    corpus/claude-projects/-Users-user-linear-agent/263940d8-….jsonl (1.0.89): three
    sidechain roots (``parentUuid: null``) whose prompt equals a Task ``input.prompt``; the
    only link to the spawn is that equality plus the spawn preceding the root.
    """

    def __init__(self, state: SessionState) -> None:
        self.parent = state.legacy_parent
        self.memo: dict[str, str] = {}

    def root(self, uuid: str) -> str:
        path = []
        cur = uuid
        while True:
            m = self.memo.get(cur)
            if m is not None:
                cur = m
                break
            p = self.parent.get(cur)
            if p is None or p not in self.parent:
                break
            path.append(cur)
            cur = p
        for u in path:
            self.memo[u] = cur
        self.memo[uuid] = cur
        return cur

    def agent(self, placeholder: str) -> str:
        return LEGACY_AGENT + self.root(placeholder[len(LEGACY_PREFIX) :])


def spawns_of(state: SessionState) -> dict[str, Spawn]:
    """Every spawn of the session by tool_use id: the transcript's ``tool_use`` block where read,
    else the hooks' (SPEC §4.3: hooks and transcripts describing one spawn converge on one edge).

    A transcript spawn is the better evidence (its record time, its own caller); a hook only fills a
    type, description or prompt the block lacks. A function of the two joined maps, so the result
    does not depend on which source arrived first.
    """
    if not state.hook_spawns:
        return state.spawns
    out = dict(state.hook_spawns)
    for tuid, sp in state.spawns.items():
        h = out.get(tuid)
        if h is not None and (sp.subagent_type is None or sp.description is None or sp.prompt is None):
            sp = Spawn(
                sp.agent,
                sp.ts,
                sp.subagent_type or h.subagent_type,
                sp.description or h.description,
                sp.prompt or h.prompt,
            )
        out[tuid] = sp
    return out


def _prompt_spawn(spawns: dict[str, Spawn], prompt: str, ts: str, exclude: str) -> str | None:
    """The latest spawn with this exact prompt not after ``ts`` (ties: the larger id)."""
    best: tuple[str, str] | None = None
    for tuid, sp in spawns.items():
        if sp.prompt == prompt and sp.ts <= ts and sp.agent != exclude:
            cand = (sp.ts, tuid)
            if best is None or cand > best:
                best = cand
    return best[1] if best else None


def derive(state: SessionState, t: Touched, ctx: Ctx) -> Changes:
    """Rows of every entity ``t`` names, computed from ``state``."""
    ch = Changes()
    sid = state.session_id
    leg = _Legacy(state) if state.legacy_parent else None

    def resolve(agent: str | None) -> str | None:
        if agent is not None and leg is not None and agent.startswith(LEGACY_PREFIX):
            return leg.agent(agent)
        return agent

    all_agents = t.all_agents or t.legacy
    spawns = spawns_of(state)
    by_child: dict[str, list[tuple[int, str, str]]] = {}
    for tuid, (rank, child) in state.links.items():
        sp = spawns.get(tuid)
        if sp is not None:
            by_child.setdefault(child, []).append((rank, sp.ts, tuid))
    names = set(state.agents) | set(by_child) if all_agents else set(t.agents)
    for a in sorted(names):
        row = _agent_row(state, spawns, a, state.agents.get(a), by_child.get(a, ()), resolve, ctx, ch)
        if row is not None:
            ch.agents.append(row)
    if leg is not None and all_agents:
        _legacy_agents(state, spawns, leg, resolve, ctx, ch)
    mev = state.agents.get(sid)
    idle = "completed" if state.ended else "unknown"  # the main agent never ran
    main_status = _main_status(state, mev) if mev is not None and mev.ran else idle
    title = next(((k, state.titles[k][1]) for k in TITLE_KINDS if k in state.titles), None)
    ch.sessions.append(
        (
            sid,
            state.project_slug[1] if state.project_slug else None,
            state.cwd[2] if state.cwd else None,
            state.first_ts,
            state.last_ts,
            main_status,
            state.git_branch[1] if state.git_branch else None,
            state.version[1] if state.version else None,
            title[1] if title else None,
            state.slug[1] if state.slug else None,
            state.entrypoint[1] if state.entrypoint else None,
            state.end_reason[1] if state.end_reason else None,
            title[0] if title else None,
        )
    )
    for where in sorted(t.summaries):
        leaf, text = state.summaries[where]
        ch.summaries.append((*where, sid, leaf, text))
    msgs = t.msgs | state.legacy_msgs if t.legacy else t.msgs
    for mid in sorted(msgs):
        by_rank = state.msgs[mid]
        rank = max(by_rank)
        ev = by_rank[rank]
        agent = resolve(ev[7])
        comp = 1 if agent is not None and agent.startswith(COMPACTION_PREFIX) else 0
        model = ev[5][1]
        # a message none of whose parts has a valid timestamp: the inferred time (validate.py)
        occurred = ev[6] if ev[6] != INFER else occurred_of(state.inferred[mid], state.ts_index)
        prompt = ev[0] + ev[2] + ev[3] + ev[4]  # the long-context tier's measure (SPEC §5.1)
        for i, bucket in enumerate(BUCKETS):
            # id None: SQLite assigns the next rowid, so the table appends in arrival order
            # (a random id rewrote most of its pages at every commit); rows compare by
            # (message_id, bucket), their natural key. Searches sit on the output row only: once per message.
            searches = ev[9] if i == 1 else 0
            ch.token_usage.append(
                (None, sid, agent, mid, model, bucket, ev[i], comp, occurred, rank, prompt, ev[8], searches)
            )
    tools = t.tools | state.legacy_tools if t.legacy else t.tools
    stopped = _Stopped(state, spawns, by_child, resolve, ctx, {r[0]: r[4] for r in ch.agents})
    if all_agents or names:
        # an agent whose terminal state may have changed: re-derive those of its open calls whose
        # derived status differs from the one last emitted (state.interrupted)
        owners: Any = [*names, ""] if all_agents else names
        extra: set[str] = set()
        for a in owners:
            for tuid in state.open_tools.get(a, ()):
                if stopped(a) != (tuid in state.interrupted):
                    extra.add(tuid)
        if leg is not None and all_agents:
            for tuid in state.legacy_tools:
                cur = state.tools[tuid]
                if cur[4] == RUNNING and stopped(resolve(cur[0]) or "") != (tuid in state.interrupted):
                    extra.add(tuid)
        if extra:
            tools = tools | extra
    for tuid in sorted(tools):
        a, name, started, ended, st, _ = state.tools[tuid]
        agent = resolve(a)
        if st == RUNNING and stopped(agent or ""):
            # no result, and its agent (or the session) ended: it can no longer be running (SPEC
            # §4.5). ended_at stays NULL: no evidence says when the call stopped (the agent's last
            # activity or SessionEnd's receipt is the agent's end, not the call's). A result read
            # later still wins (its status ranks above running).
            st = INTERRUPTED
            state.interrupted.add(tuid)
        else:
            state.interrupted.discard(tuid)
        ch.tool_calls.append((sid, tuid, agent, name, started, ended, STATUSES[st]))
    for bid in sorted(t.compactions):
        a, ts, trig, pre = state.compactions[bid]
        ch.compactions.append((sid, bid, resolve(a), ts, trig, pre))
    return ch


class _Stopped:
    """Whether an agent's calls can no longer be running: the session ended, or the agent's derived
    status is terminal (``completed`` / ``error``; SPEC §4.5 ``interrupted``).

    The agent's status is the one of its row derived in this call, else derived on demand (a
    function of the merged state either way). The watchdog's ``unknown`` is no end: it is not
    derived here and a quiet agent may still resume.
    """

    def __init__(
        self,
        state: SessionState,
        spawns: dict[str, Spawn],
        by_child: Any,
        resolve: Any,
        ctx: Ctx,
        known: dict[str, str],
    ) -> None:
        self.state = state
        self.spawns = spawns
        self.by_child = by_child
        self.resolve = resolve
        self.ctx = ctx
        self.known = known

    def __call__(self, agent: str) -> bool:
        if self.state.ended:
            return True
        status = self.known.get(agent)
        if status is None and agent and agent not in self.known:
            row = _agent_row(
                self.state,
                self.spawns,
                agent,
                self.state.agents.get(agent),
                self.by_child.get(agent, ()),
                self.resolve,
                self.ctx,
                Changes(),
            )
            status = self.known[agent] = row[4] if row is not None else ""
        return status in _TERMINAL


def _main_status(state: SessionState, ev: AgentEv) -> str:
    """The main agent's status (and its session's): completed once the session ended, else its newest evidence."""
    return "completed" if state.ended else (ev.latest[1] if ev.latest else "working")


def _ended_without_stop(ev: AgentEv | None) -> tuple[str, str | None]:
    """A subagent's status once its session ended (SessionEnd) with no stop evidence for it.

    Stop evidence is a SubagentStop, a spawn ``tool_result``, a task-notification, or a compaction
    call that returned; callers apply those first, whatever order they were logged in (SPEC §4.2:
    status is a function of the evidence set). Without any, the subagent did not finish: ``error``
    with ``terminated_early`` (SubagentStart then SessionEnd and nothing else: it was killed, and
    calling it completed hides exactly that), unless its own transcript's newest turn is a final
    reply (``toolstatus.END``: the run returned its answer; only the stop hook is missing).
    """
    if ev is not None and ev.last_turn is not None and ev.last_turn[1] == END:
        return "completed", None
    return "error", "terminated_early"


def _edge(
    state: SessionState,
    spawns: dict[str, Spawn],
    child: str,
    tuid: str,
    source: str,
    resolve: Any,
    ctx: Ctx,
    ch: Changes,
) -> str | None:
    sp = spawns[tuid]
    parent = resolve(sp.agent)
    if parent is None or parent == child:
        return None
    sid = state.session_id
    ch.edges.append((stable_id(sid, child), sid, parent, child, source, ctx.instance, ctx.host_id, sp.ts, tuid))
    return str(parent)


def _spawn_status(state: SessionState, tuid: str | None) -> tuple[str | None, str | None]:
    if tuid is None:
        return None, None
    res = state.results.get(tuid)
    if res is None:
        return None, None
    return ("error", res[1] or "unclassified") if res[0] else ("completed", None)


def _agent_row(
    state: SessionState,
    spawns: dict[str, Spawn],
    a: str,
    ev: AgentEv | None,
    links: Any,
    resolve: Any,
    ctx: Ctx,
    ch: Changes,
) -> tuple[Any, ...] | None:
    sid = state.session_id
    if a.startswith(LEGACY_PREFIX):
        return None
    ran = ev is not None and ev.ran
    if not ran and not links:
        return None  # no evidence it ran: a stop for an agent that never started creates nothing
    if a == sid:
        assert ev is not None
        return (a, sid, "main", None, _main_status(state, ev), None, ev.first_ts, ev.last_ts, None, 0, None)
    best: tuple[int, str, str] | None = max(links) if links else None
    source = None
    tuid = None
    if best is not None:
        tuid = best[2]
        source = next(s for s, r in EDGE_RANK.items() if r == best[0])
    elif ev is not None and ev.root_prompt is not None:
        # 2.0.x flat files: tied to the spawn only by session and prompt text (FORMATS.md §4),
        # e.g. corpus/claude-projects/-Users-user-play-agentic-primer/agent-a0294d5.jsonl.
        tuid = _prompt_spawn(spawns, ev.root_prompt[1], ev.root_prompt[0], a)
        source = "directory" if tuid else None
    sp: Spawn | None = spawns.get(tuid) if tuid else None
    parent = _edge(state, spawns, a, tuid, source, resolve, ctx, ch) if tuid and source else None
    comp = a.startswith(COMPACTION_PREFIX)
    cause: str | None
    status: str | None
    status, cause = _spawn_status(state, tuid)
    note = state.notified.get(a)
    if status is None and note is not None:
        status, cause = ("completed", None) if note == "completed" else ("error", "terminated_early")
    if status is None and ev is not None:
        # how the subagent's own run ended (toolstatus.FAILED_ENDINGS, each rule with its real line);
        # "over" = the session ended with no success signal for it (no SubagentStop either)
        failed = ending(ev.last_turn, state.ended and not ev.completed)
        if failed is not None:
            status, cause = "error", failed
    if status is None and ev is not None and ev.completed:
        status = "completed"  # SubagentStop, whenever it was logged (before or after SessionEnd)
    if status is None and comp and ev is not None and ev.has_assistant:
        status = "completed"  # the compaction call returned (it is the sidechain's last record)
    if status is None and state.ended:
        status, cause = _ended_without_stop(ev)
    if status is None:
        status = ev.latest[1] if ev is not None and ev.latest else "working"
    res = state.results.get(tuid) if tuid else None
    first = ev.first_ts if ev is not None and ev.first_ts else (sp.ts if sp else None)
    last = ev.last_ts if ev is not None and ev.last_ts else None
    if res is not None and (last is None or res[2] > last):
        last = res[2]
    if last is None and sp is not None:
        last = sp.ts
    stype = (sp.subagent_type if sp else None) or (ev.hook_type if ev else None) or (ev.meta_type if ev else None)
    desc = sp.description if sp else None
    if ev is not None and ev.root_prompt is not None and ev.root_prompt[1] == "Warmup" and desc is None:
        # 2.0.x "Warmup" sidechains are not real work (corpus/claude-projects/-workspace/agent-af1ff21.jsonl)
        desc = "Warmup"
    return (a, sid, "subagent", stype, status, parent, first, last, cause, 1 if comp else 0, desc)


def _legacy_agents(
    state: SessionState, spawns: dict[str, Spawn], leg: _Legacy, resolve: Any, ctx: Ctx, ch: Changes
) -> None:
    groups: dict[str, list[str]] = {}
    for uuid, ts in state.legacy_ts.items():
        r = leg.root(uuid)
        g = groups.get(r)
        if g is None:
            groups[r] = [ts, ts]
        else:
            if ts < g[0]:
                g[0] = ts
            if ts > g[1]:
                g[1] = ts
    sid = state.session_id
    # A root seen before its chain was complete named a provisional agent: retract it.
    current = {LEGACY_AGENT + r for r in groups}
    ch.retracted_agents.extend((state.session_id, a) for a in sorted(state.legacy_emitted - current))
    state.legacy_emitted = current
    for root in sorted(groups):
        first, last = groups[root]
        aid = LEGACY_AGENT + root
        prompt = state.legacy_prompt.get(root)
        tuid = _prompt_spawn(spawns, prompt, first, LEGACY_PREFIX + root) if prompt is not None else None
        sp = spawns.get(tuid) if tuid else None
        parent = _edge(state, spawns, aid, tuid, "legacy_explore", resolve, ctx, ch) if tuid else None
        status, cause = _spawn_status(state, tuid)
        if status is None:
            status, cause = _ended_without_stop(None) if state.ended else ("working", None)
        res = state.results.get(tuid) if tuid else None
        if res is not None and res[2] > last:
            last = res[2]
        ch.agents.append(
            (
                aid,
                sid,
                "subagent",
                sp.subagent_type if sp else None,
                status,
                parent,
                first,
                last,
                cause,
                0,
                sp.description if sp else None,
            )
        )
