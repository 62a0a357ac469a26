"""Agent and edge rows derived from a session's fold state (SPEC §4.2, §4.3), pure.

``View`` is what every agent rule reads: the state, its spawns (transcript and hook evidence
merged), the links by child, the 1.0.x legacy resolution. The rules are functions of the
merged state only, so any order or batching of the same log rows derives the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ingestd.core.keys import stable_id
from ingestd.core.rows import AgentKey, AgentRow, EdgeRow
from ingestd.core.state import EDGE_RANK, LEGACY_PREFIX, AgentEv, SessionState, Spawn
from ingestd.core.toolstatus import END, ending
from ingestd.core.touch import Ctx

LEGACY_AGENT = "sidechain-"  # id of a 1.0.x in-file sidechain agent: prefix + its root record's uuid
COMPACTION_PREFIX = "acompact-"
TERMINAL = frozenset(("completed", "error"))

# (edge rank, spawn time, tool_use id) of one link naming a child agent
Link = tuple[int, str, str]


class Legacy:
    """Resolution of 1.0.x in-file sidechains to agents (walk ``parentUuid`` to the root).

    corpus/claude-projects/-Users-user-linear-agent/263940d8-….jsonl (1.0.89): three
    sidechain roots (``parentUuid: null``) whose prompt equals a Task ``input.prompt``; the
    only link to the spawn is that equality plus the spawn preceding the root.
    """

    def __init__(self, state: SessionState) -> None:
        self.parent = state.legacy_parent
        self.memo: dict[str, str] = {}

    def root(self, uuid: str) -> str:
        """The root record uuid of the sidechain chain ``uuid`` is in (memoised)."""
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
        """The agent id a ``LEGACY_PREFIX`` placeholder resolves to."""
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
        if h is not None and None in (sp.subagent_type, sp.description, sp.prompt, sp.team, sp.name):
            sp = Spawn(
                sp.agent,
                sp.ts,
                sp.subagent_type or h.subagent_type,
                sp.description or h.description,
                sp.prompt or h.prompt,
                sp.team or h.team,
                sp.name or h.name,
            )
        out[tuid] = sp
    return out


@dataclass(slots=True)
class View:
    """The merged evidence the agent rules read, built once per ``derive`` call.

    Attributes:
        state: the session's fold state (read, except ``Legacy``'s memo and ``legacy_emitted``).
        ctx: instance / host ids stamped on edges.
        spawns: tool_use id -> spawn (``spawns_of``).
        by_child: child agent -> its ``Link``s.
        legacy: the 1.0.x sidechain resolution, None when the session has no such records.
        statuses: agent -> status derived in this call ('' for an agent with no row).
    """

    state: SessionState
    ctx: Ctx
    spawns: dict[str, Spawn]
    by_child: dict[str, list[Link]]
    legacy: Legacy | None
    statuses: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, state: SessionState, ctx: Ctx) -> View:
        """The view of ``state`` (spawns merged, links grouped by child).

        A link whose spawn was called by its own child is left out: an agent cannot have spawned
        itself, and such a link (a subagent's Task call whose result names the subagent) once beat
        the real spawn's and left the subagent without a parent edge.
        """
        spawns = spawns_of(state)
        by_child: dict[str, list[Link]] = {}
        for tuid, (rank, child) in state.links.items():
            sp = spawns.get(tuid)
            if sp is not None and sp.agent != child:
                by_child.setdefault(child, []).append((rank, sp.ts, tuid))
        return cls(state, ctx, spawns, by_child, Legacy(state) if state.legacy_parent else None)

    def resolve(self, agent: str | None) -> str | None:
        """The agent id a fold-time agent stands for (a legacy placeholder resolved to its root's agent)."""
        if agent is not None and self.legacy is not None and agent.startswith(LEGACY_PREFIX):
            return self.legacy.agent(agent)
        return agent

    def stopped(self, agent: str) -> bool:
        """Whether an agent's calls can no longer be running: the session ended, or the agent's
        derived status is terminal (``completed`` / ``error``; SPEC §4.5 ``interrupted``).

        The status is the one of its row derived in this call, else derived on demand (a function of
        the merged state either way). The watchdog's ``unknown`` is no end: it is not derived here
        and a quiet agent may still resume.
        """
        if self.state.ended:
            return True
        status = self.statuses.get(agent)
        if status is None and agent and agent not in self.statuses:
            row = agent_row(self, agent, [])
            status = self.statuses[agent] = row.status if row is not None else ""
        return status in TERMINAL


def main_status(state: SessionState, ev: AgentEv) -> str:
    """The main agent's status (and its session's): completed once the session ended, else its newest evidence."""
    return "completed" if state.ended else (ev.latest[1] if ev.latest else "working")


def ended_without_stop(ev: AgentEv | None) -> tuple[str, str | None]:
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


def agent_rows(v: View, names: Sequence[str], edges: list[EdgeRow]) -> list[AgentRow]:
    """The rows of agents ``names`` (sorted), each agent's edge appended to ``edges``; records each
    row's status in ``v.statuses``."""
    out = []
    for a in names:
        row = agent_row(v, a, edges)
        if row is not None:
            out.append(row)
            v.statuses[a] = row.status
    return out


def _edge(v: View, child: str, tuid: str, source: str, edges: list[EdgeRow]) -> str | None:
    """Append the edge from spawn ``tuid``'s caller to ``child``; return the parent (None: no edge)."""
    sp = v.spawns[tuid]
    parent = v.resolve(sp.agent)
    if parent is None or parent == child:
        return None
    sid = v.state.session_id
    edges.append(EdgeRow(stable_id(sid, child), sid, parent, child, source, v.ctx.instance, v.ctx.host_id, sp.ts, tuid))
    return parent


def _spawn_status(state: SessionState, tuid: str | None) -> tuple[str | None, str | None]:
    """(status, cause) the spawn's result gives, (None, None) without one."""
    if tuid is None:
        return None, None
    res = state.results.get(tuid)
    if res is None:
        return None, None
    return ("error", res.cause or "unclassified") if res.is_error else ("completed", None)


def _prompt_spawn(spawns: dict[str, Spawn], prompt: str, ts: str, exclude: str) -> str | None:
    """The latest spawn with this exact prompt not after ``ts`` (ties: the larger id)."""
    best: tuple[str, str] | None = None
    for tuid, sp in spawns.items():
        if sp.prompt == prompt and sp.ts <= ts and sp.agent != exclude:
            cand = (sp.ts, tuid)
            if best is None or cand > best:
                best = cand
    return best[1] if best else None


def _spawn_of(v: View, a: str, ev: AgentEv | None) -> tuple[str | None, str | None]:
    """(tool_use id, edge source) of the spawn that started subagent ``a``: its best link, else
    (2.0.x flat files, FORMATS.md §4, e.g. corpus/claude-projects/-Users-user-play-agentic-primer/
    agent-a0294d5.jsonl) the spawn whose prompt is its first prompt (``directory``)."""
    links = v.by_child.get(a)
    if links:
        best = max(links)
        return best[2], next(s for s, r in EDGE_RANK.items() if r == best[0])
    if ev is not None and ev.root_prompt is not None:
        tuid = _prompt_spawn(v.spawns, ev.root_prompt[1], ev.root_prompt[0], a)
        return tuid, "directory" if tuid else None
    return None, None


def _subagent_status(v: View, a: str, ev: AgentEv | None, tuid: str | None) -> tuple[str, str | None]:
    """(status, outcome_cause) of subagent ``a``: the first rule with evidence, in precedence order."""
    state = v.state
    ended = _ended_for(state, ev)
    status, cause = _spawn_status(state, tuid)
    note = state.notified.get(a)
    if status is None and note is not None:
        status, cause = ("completed", None) if note[1] == "completed" else ("error", "terminated_early")
    if status is None and ev is not None:
        # how the subagent's own run ended (toolstatus.FAILED_ENDINGS, each rule with its real line);
        # "over" = the session ended with no success signal for it (no SubagentStop either)
        failed = ending(ev.last_turn, ended and not ev.completed)
        if failed is not None:
            status, cause = "error", failed
    if status is None and ev is not None and ev.completed:
        status = "completed"  # SubagentStop, whenever it was logged (before or after SessionEnd)
    if status is None and a.startswith(COMPACTION_PREFIX) and ev is not None and ev.has_assistant:
        status = "completed"  # the compaction call returned (it is the sidechain's last record)
    if status is None and ended:
        status, cause = ended_without_stop(ev)
    if status is None:
        status = ev.latest[1] if ev is not None and ev.latest else "working"
    return status, cause


def _ended_for(state: SessionState, ev: AgentEv | None) -> bool:
    """Whether a subagent's run was ended by a SessionEnd: the session is ended now, or it was
    resumed after an end that came after the subagent's last evidence (a resume does not resume a
    subagent: Claude Code starts its runs afresh)."""
    if state.ended:
        return True
    last = ev.last_ts if ev is not None else None
    return state.end_at is not None and last is not None and last <= state.end_at


def agent_row(v: View, a: str, edges: list[EdgeRow]) -> AgentRow | None:
    """The row of agent ``a`` (None: a legacy placeholder, or no evidence it ran); its edge is
    appended to ``edges``."""
    state = v.state
    sid = state.session_id
    ev = state.agents.get(a)
    if a.startswith(LEGACY_PREFIX) or ((ev is None or not ev.ran) and not v.by_child.get(a)):
        return None  # no evidence it ran: a stop for an agent that never started creates nothing
    if a == sid:
        assert ev is not None
        return AgentRow(a, sid, "main", None, main_status(state, ev), None, ev.first_ts, ev.last_ts, None, 0, None)
    tuid, source = _spawn_of(v, a, ev)
    sp: Spawn | None = v.spawns.get(tuid) if tuid else None
    parent = _edge(v, a, tuid, source, edges) if tuid and source else None
    status, cause = _subagent_status(v, a, ev, tuid)
    res = state.results.get(tuid) if tuid else None
    first = ev.first_ts if ev is not None and ev.first_ts else (sp.ts if sp else None)
    last = ev.last_ts if ev is not None and ev.last_ts else None
    if res is not None and (last is None or res.ts > last):
        last = res.ts
    if last is None and sp is not None:
        last = sp.ts
    stype = (sp.subagent_type if sp else None) or (ev.hook_type if ev else None) or (ev.meta_type if ev else None)
    desc = (sp.description if sp else None) or (ev.meta_desc if ev else None)
    if ev is not None and ev.root_prompt is not None and ev.root_prompt[1] == "Warmup" and desc is None:
        # 2.0.x "Warmup" sidechains are not real work (corpus/claude-projects/-workspace/agent-af1ff21.jsonl)
        desc = "Warmup"
    comp = 1 if a.startswith(COMPACTION_PREFIX) else 0
    name = (ev.name if ev is not None else None) or (sp.name if sp else None)
    # a teammate: its spawn named a team (2.1.4x), or a teammate hook names it (DESIGN.md "Teammates")
    kind = "teammate" if (sp is not None and sp.team) or (name is not None and name in state.teammates) else "subagent"
    return AgentRow(a, sid, kind, stype, status, parent, first, last, cause, comp, desc, name)


def legacy_agents(v: View, leg: Legacy, edges: list[EdgeRow], retracted: list[AgentKey]) -> list[AgentRow]:
    """The 1.0.x in-file sidechain agents (one per chain root), their edges appended to ``edges``.

    Mutates ``v.state.legacy_emitted``: a root seen before its chain was complete named a
    provisional agent, which is appended to ``retracted``.
    """
    state = v.state
    groups: dict[str, list[str]] = {}
    for uuid, ts in state.legacy_ts.items():
        g = groups.setdefault(leg.root(uuid), [ts, ts])
        g[0] = min(g[0], ts)
        g[1] = max(g[1], ts)
    current = {LEGACY_AGENT + r for r in groups}
    retracted.extend(AgentKey(state.session_id, a) for a in sorted(state.legacy_emitted - current))
    state.legacy_emitted = current
    out = []
    for root in sorted(groups):
        first, last = groups[root]
        aid = LEGACY_AGENT + root
        prompt = state.legacy_prompt.get(root)
        tuid = _prompt_spawn(v.spawns, prompt, first, LEGACY_PREFIX + root) if prompt is not None else None
        sp = v.spawns.get(tuid) if tuid else None
        parent = _edge(v, aid, tuid, "legacy_explore", edges) if tuid else None
        status, cause = _spawn_status(state, tuid)
        if status is None:
            status, cause = ended_without_stop(None) if state.ended else ("working", None)
        res = state.results.get(tuid) if tuid else None
        if res is not None and res.ts > last:
            last = res.ts
        stype, desc = (sp.subagent_type, sp.description) if sp else (None, None)
        out.append(AgentRow(aid, state.session_id, "subagent", stype, status, parent, first, last, cause, 0, desc))
    return out
