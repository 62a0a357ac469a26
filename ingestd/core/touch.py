"""Touched-entity tracking and small state helpers shared by the fold handlers, pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from ingestd.core.records import LogRow
from ingestd.core.rows import QuarantineRow
from ingestd.core.state import (
    EDGE_RANK,
    LEGACY_PREFIX,
    AgentEv,
    PromptEv,
    SessionState,
    SpawnResult,
    TitleKey,
    ToolEv,
)
from ingestd.core.toolstatus import RUNNING


@dataclass(frozen=True, slots=True)
class Ctx:
    """Inputs of the projector that are not log rows.

    Attributes:
        instance: str, the ingestd instance that produced the log (stamped on edges).
        host_id: str, the machine it runs on.
    """

    instance: str = "local"
    host_id: str = "local"


@dataclass(slots=True)
class Touched:
    """What one fold call touched (only these rows are re-derived)."""

    session: bool = False
    agents: set[str] = field(default_factory=set)
    all_agents: bool = False
    msgs: set[str] = field(default_factory=set)
    tools: set[str] = field(default_factory=set)
    compactions: set[str] = field(default_factory=set)
    tasks: set[str] = field(default_factory=set)
    prompts: set[str] = field(default_factory=set)
    cost_state: bool = False  # a ``cost-state`` record was folded: its models' rows are derived
    summaries: set[tuple[str, int, int]] = field(default_factory=set)
    legacy: bool = False
    otel: set[str] = field(default_factory=set)  # request keys of the api_request / api_error events folded
    otel_compactions: bool = False  # a compaction event was folded: their match is derived again
    quarantined: list[QuarantineRow] = field(default_factory=list)  # the quarantine rows of this call
    row: LogRow | None = None  # the log row being folded
    # ((origin, gen), offset, received_at) of that row when its timestamp is refused or absent
    bad_at: tuple[tuple[str, int], int, str] | None = None
    untimed: bool = False  # that row's record has no timestamp at all (``validate.note_time``)
    undated: bool = False  # absent or refused, and no record beside it in its file has one: no time to infer


def agent_ev(state: SessionState, agent: str) -> AgentEv:
    """The agent's evidence record, created empty on first mention."""
    ev = state.agents.get(agent)
    if ev is None:
        ev = state.agents[agent] = AgentEv()
    return ev


def note_tool(
    state: SessionState,
    t: Touched,
    tuid: str,
    *,
    agent: str | None = None,
    name: str | None = None,
    started: str | None = None,
    ended: str | None = None,
    status: int = 0,
    agent_named: bool = True,
    prompt_id: str | None = None,
    reason: str | None = None,
) -> None:
    """Merge one piece of tool-call evidence (every field a join: min / max).

    ``agent_named=False``: the caller is only a default, not evidence (a hook without ``agent_id``
    means the main agent from 2.1.69 on, but before it a subagent's tool events carried no
    ``agent_id`` either: CL 2.1.69, FORMATS.md §4 "Hooks"). Any named agent (a transcript record's,
    a hook's ``agent_id``) beats a default; among equals the smaller id.
    """
    cur = state.tools.get(tuid)
    rank = 1 if agent_named else 0
    was_open: str | None = None
    if cur is None:
        cur = state.tools[tuid] = ToolEv(
            agent, name, started, ended, status, rank if agent is not None else -1, prompt_id, reason
        )
    else:
        was_open = (cur.agent or "") if cur.status == RUNNING else None
        if agent is not None and (
            cur.agent is None or rank > cur.agent_rank or (rank == cur.agent_rank and agent < cur.agent)
        ):
            cur.agent = agent
            cur.agent_rank = rank
        if name is not None and (cur.name is None or name > cur.name):
            cur.name = name
        if started is not None and (cur.started is None or started < cur.started):
            cur.started = started
        if ended is not None and (cur.ended is None or ended < cur.ended):
            cur.ended = ended
        cur.status = max(cur.status, status)
        if prompt_id is not None and (cur.prompt_id is None or prompt_id < cur.prompt_id):
            cur.prompt_id = prompt_id
        if reason is not None and (cur.reason is None or reason > cur.reason):
            cur.reason = reason
    # keep ``state.open_tools`` (agent, "" for none -> its running calls) an index of ``state.tools``
    is_open = (cur.agent or "") if cur.status == RUNNING else None
    if was_open is not None and was_open != is_open:
        calls = state.open_tools[was_open]
        calls.discard(tuid)
        if not calls:
            del state.open_tools[was_open]
    if is_open is not None:
        state.open_tools.setdefault(is_open, set()).add(tuid)
    t.tools.add(tuid)
    if agent is not None and agent.startswith(LEGACY_PREFIX):
        state.legacy_tools.add(tuid)


def link(state: SessionState, tuid: str, source: str, child: str) -> None:
    """Record that spawn ``tuid`` started ``child`` (better provenance wins, then the smaller id)."""
    rank = EDGE_RANK[source]
    prev = state.links.get(tuid)
    if prev is None or rank > prev[0] or (rank == prev[0] and child < prev[1]):
        state.links[tuid] = (rank, child)


def note_result(state: SessionState, tuid: str, is_error: bool, cause: str | None, ts: str) -> None:
    """Merge a spawn's result: an error beats a success, then the larger cause / later time."""
    cand = SpawnResult(1 if is_error else 0, cause, ts)
    prev = state.results.get(tuid)
    if prev is None or (cand.is_error, cand.cause or "", cand.ts) > (prev.is_error, prev.cause or "", prev.ts):
        state.results[tuid] = cand


def note_prompt(
    state: SessionState, t: Touched, pid: str, ts: str, *, index: int | None = None, text: str | None = None
) -> None:
    """Merge one piece of evidence naming prompt ``pid`` at ``ts`` (every field a join: min / max):
    ``index`` its ``turnPosition.promptIndex``, ``text`` what the person typed."""
    cur = state.prompts.get(pid)
    if cur is None:
        cur = state.prompts[pid] = PromptEv()
    if cur.first_at is None or ts < cur.first_at:
        cur.first_at = ts
    if cur.last_at is None or ts > cur.last_at:
        cur.last_at = ts
    if index is not None and (cur.index is None or index < cur.index):
        cur.index = index
    if text is not None and (cur.text is None or (ts, text) < cur.text):
        cur.text = (ts, text)
    t.prompts.add(pid)


def note_title(state: SessionState, kind: str, key: TitleKey, text: str) -> None:
    """Merge one title candidate of ``kind`` (``state.TITLE_KINDS``): the largest ``(key, text)`` wins."""
    cur = state.titles.get(kind)
    if cur is None or (key, text) > cur:
        state.titles[kind] = (key, text)
