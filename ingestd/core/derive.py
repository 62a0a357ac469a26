"""Projection rows derived from a session's fold state (SPEC §4), pure.

Every row is a function of the merged state only, so any order or batching of the
same log rows derives the same rows (order independence, property-tested).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ingestd.core.derive_agents import COMPACTION_PREFIX, View, agent_rows, legacy_agents, main_status
from ingestd.core.otelfold import derive_compactions, derive_otel
from ingestd.core.rows import (
    AgentKey,
    AgentRow,
    CcModelUsageRow,
    CompactionRow,
    EdgeRow,
    EventRow,
    OtelMetricRow,
    OtelRequestRow,
    PromptRow,
    QuarantineRow,
    RateLimitSampleRow,
    SearchDocRow,
    SessionRow,
    SummaryRow,
    TaskRow,
    TokenUsageRow,
    ToolCallRow,
    UsageKey,
)
from ingestd.core.state import TITLE_KINDS, SessionState, copies_max
from ingestd.core.storable import MAX_TEXT_BYTES, storable
from ingestd.core.toolstatus import INTERRUPTED, RUNNING, STATUSES
from ingestd.core.touch import Ctx, Touched
from ingestd.core.validate import INFER, occurred_of

BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


@dataclass(slots=True)
class Changes:
    """Full rows of touched entities, each a named row of ``ingestd.core.rows`` (its table's columns).

    The change output of one fold is keyed by session: every row names its ``session_id``, and an
    agent is the pair ``(session_id, id)`` (SPEC §4.2, migration 0009): ``parent_agent_id``,
    an edge's endpoints and a usage / tool row's ``agent_id`` are agents of that row's session.
    A store upserts each row by its key below, later rows of one key winning (token_usage: the
    better claim wins, DESIGN.md "token_usage across sessions").

    Attributes:
        sessions: ``SessionRow`` (key id), one per fold call.
        agents: ``AgentRow`` (key session_id, id).
        edges: ``EdgeRow`` (key session_id, child_agent_id; id = stable_id(session_id, child)).
        token_usage: ``TokenUsageRow`` (key message_id; id None).
        tool_calls: ``ToolCallRow`` (key session_id, tool_use_id).
        compactions: ``CompactionRow`` (key session_id, boundary_id).
        tasks: ``TaskRow`` (key session_id, task_id).
        prompts: ``PromptRow`` (key session_id, prompt_id).
        cc_model_usage: ``CcModelUsageRow`` (key session_id, model), Claude Code's own totals.
        events: ``EventRow`` (key raw_event_id), one per hook delivery.
        rate_limit_samples: ``RateLimitSampleRow`` (key raw_event_id), one per status-line snapshot.
        search_docs: ``SearchDocRow`` (key doc_id), the text of transcript records
            (``ingestd.core.search``), storable already.
        summaries: ``SummaryRow`` (key origin, origin_gen, origin_offset): the session's files'
            ``summary`` records, whose session is the one of the record ``leaf_uuid`` names
            (``ingestd.store.titles``).
        retracted_agents: ``AgentKey`` of provisional 1.0.x sidechain agents to delete, with the
            edge to them.
        otel_requests: ``OtelRequestRow`` (key session_id, request_key): Claude Code's api_request /
            api_error events, reconciled (``ingestd.core.otelfold``).
        otel_metrics: ``OtelMetricRow`` (key raw_event_id), one per metric data point.
        retracted_usage: ``UsageKey`` of the own usage rows of events a transcript message now
            explains: a store deletes them before it upserts ``token_usage``.
        retracted_compactions: ``(session_id, boundary_id)`` of the own compaction rows of
            telemetry events a transcript boundary now explains: a store deletes them before it
            upserts ``compactions``.
        quarantine: ``QuarantineRow`` (key raw_event_id, reason).
    """

    sessions: list[SessionRow] = field(default_factory=list)
    agents: list[AgentRow] = field(default_factory=list)
    edges: list[EdgeRow] = field(default_factory=list)
    token_usage: list[TokenUsageRow] = field(default_factory=list)
    tool_calls: list[ToolCallRow] = field(default_factory=list)
    compactions: list[CompactionRow] = field(default_factory=list)
    tasks: list[TaskRow] = field(default_factory=list)
    prompts: list[PromptRow] = field(default_factory=list)
    cc_model_usage: list[CcModelUsageRow] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    rate_limit_samples: list[RateLimitSampleRow] = field(default_factory=list)
    search_docs: list[SearchDocRow] = field(default_factory=list)
    quarantine: list[QuarantineRow] = field(default_factory=list)
    summaries: list[SummaryRow] = field(default_factory=list)
    retracted_agents: list[AgentKey] = field(default_factory=list)
    otel_requests: list[OtelRequestRow] = field(default_factory=list)
    otel_metrics: list[OtelMetricRow] = field(default_factory=list)
    retracted_usage: list[UsageKey] = field(default_factory=list)
    retracted_compactions: list[tuple[str, str]] = field(default_factory=list)

    def extend(self, other: Changes) -> None:
        """Append ``other``'s rows (later rows of the same key win at upsert time). An agent ``other``
        retracts loses its rows appended before (and the edge to it), as a later row of its key
        would win: a store deletes retracted agents before it upserts."""
        if other.retracted_agents:
            gone = set(other.retracted_agents)
            self.agents = [a for a in self.agents if (a.session_id, a.id) not in gone]
            self.edges = [e for e in self.edges if (e.session_id, e.child_agent_id) not in gone]
        if other.retracted_usage:
            dropped = {k.message_id for k in other.retracted_usage}
            self.token_usage = [r for r in self.token_usage if r.message_id not in dropped]
        if other.token_usage and self.retracted_usage:
            back = {r.message_id for r in other.token_usage}
            self.retracted_usage = [k for k in self.retracted_usage if k.message_id not in back]
        if other.retracted_compactions:
            gone_c = set(other.retracted_compactions)
            self.compactions = [c for c in self.compactions if (c.session_id, c.boundary_id) not in gone_c]
        if other.compactions and self.retracted_compactions:
            back_c = {(c.session_id, c.boundary_id) for c in other.compactions}
            self.retracted_compactions = [k for k in self.retracted_compactions if k not in back_c]
        self.sessions.extend(other.sessions)
        self.agents.extend(other.agents)
        self.edges.extend(other.edges)
        self.token_usage.extend(other.token_usage)
        self.tool_calls.extend(other.tool_calls)
        self.compactions.extend(other.compactions)
        self.tasks.extend(other.tasks)
        self.prompts.extend(other.prompts)
        self.cc_model_usage.extend(other.cc_model_usage)
        self.events.extend(other.events)
        self.rate_limit_samples.extend(other.rate_limit_samples)
        self.search_docs.extend(other.search_docs)
        self.quarantine.extend(other.quarantine)
        self.summaries.extend(other.summaries)
        self.retracted_agents.extend(other.retracted_agents)
        self.otel_requests.extend(other.otel_requests)
        self.otel_metrics.extend(other.otel_metrics)
        self.retracted_usage.extend(other.retracted_usage)
        self.retracted_compactions.extend(other.retracted_compactions)


_SHORT = MAX_TEXT_BYTES // 4


def _storable_rows(rows: list[Any]) -> None:
    """Every text field of ``rows`` (named rows) in its ``storable`` form, in place."""
    for i, row in enumerate(rows):
        for v in row:
            # ``storable``'s own first test, inlined: this runs for every text value projected
            if type(v) is str and (len(v) > _SHORT or "\x00" in v or not v.isascii()) and storable(v) is not v:
                rows[i] = row._make([storable(x) if type(x) is str else x for x in row])
                break


def storable_changes(ch: Changes) -> Changes:
    """``ch`` with every text value of every row in its ``storable`` form (in place; returned).

    The projector's last step, so both stores write the same text whatever the log holds.
    """
    for rows in (
        ch.sessions,
        ch.agents,
        ch.edges,
        ch.token_usage,
        ch.tool_calls,
        ch.compactions,
        ch.tasks,
        ch.prompts,
        ch.cc_model_usage,
        ch.events,
        ch.rate_limit_samples,
        ch.quarantine,
        ch.summaries,
        ch.retracted_agents,
        ch.otel_requests,
        ch.otel_metrics,
        ch.retracted_usage,
    ):
        _storable_rows(rows)
    return ch


def derive(state: SessionState, t: Touched, ctx: Ctx) -> Changes:
    """Full rows of every entity ``t`` names (and the session's row), computed from ``state``.

    Mutates ``state``: ``interrupted`` (which open tool calls were last derived ``interrupted``),
    ``legacy_emitted`` (the 1.0.x sidechain agents last derived, to retract the provisional
    ones), ``retract_msgs`` (the keys of a split message id retracted now) and ``otel_last``
    (``otelfold.derive_otel``); nothing else. Returns a new ``Changes``
    without events or quarantine rows (the fold adds those).
    """
    v = View.of(state, ctx)
    ch = Changes()
    names = _agents(v, t, ch)
    ch.sessions.append(_session_row(state, _unmatched_notices(v)))
    for where in sorted(t.summaries):
        leaf, text = state.summaries[where]
        ch.summaries.append(SummaryRow(*where, state.session_id, leaf, text))
    _token_usage(v, t.msgs | state.legacy_msgs if t.legacy else t.msgs, ch)
    if state.retract_msgs and not state.needs_refold:
        # the refold has derived the split id's messages again: the rows derived before it go (a
        # key derived again is deleted first, then written: its stored maximum held what moved)
        ch.retracted_usage.extend(UsageKey(state.session_id, k) for k in sorted(state.retract_msgs))
        state.retract_msgs = set()
    derive_otel(state, t, ch.otel_requests, ch.token_usage, ch.retracted_usage)
    _tool_calls(v, t, names, ch)
    for bid in sorted(t.compactions):
        a, ts, trig, pre = state.compactions[bid]
        summary = state.compact_summaries.get(bid)
        ch.compactions.append(
            CompactionRow(state.session_id, bid, v.resolve(a), ts, trig, pre, summary[1] if summary else None)
        )
    derive_compactions(state, t, ch.compactions, ch.retracted_compactions)
    for tid in sorted(t.tasks):
        k = state.tasks[tid]
        status = "completed" if k.completed_at is not None else "pending"
        ch.tasks.append(
            TaskRow(state.session_id, tid, k.subject, k.description, k.teammate, status, k.created_at, k.completed_at)
        )
    for pid in sorted(t.prompts):
        p = state.prompts[pid]
        ch.prompts.append(
            PromptRow(state.session_id, pid, p.index, p.text[1] if p.text else None, p.first_at, p.last_at)
        )
    if t.cost_state:
        ch.cc_model_usage.extend(_cc_model_usage(state))
    return ch


def _cc_model_usage(state: SessionState) -> list[CcModelUsageRow]:
    """A row per model any ``cost-state`` of the session named: the latest record's figures, None
    where the latest record does not name the model (so no stale row outlives a newer record)."""
    latest = dict(state.cost_state.models) if state.cost_state is not None else {}
    empty = (None,) * 7
    return [CcModelUsageRow(state.session_id, m, *latest.get(m, empty)) for m in sorted(state.cost_models)]


def _unmatched_notices(v: View) -> int:
    """How many ``<task-notification>`` task ids name no agent that has a row (``derive_agents.agent_row``:
    evidence that it ran, or a link naming it): a background shell's task, an agent of a file not
    read. Kept and counted, never an agent."""
    state = v.state
    n = 0
    for task in state.notified:
        ev = state.agents.get(task)
        if (ev is None or not ev.ran) and not v.by_child.get(task):
            n += 1
    return n


def _agents(v: View, t: Touched, ch: Changes) -> set[str]:
    """Append the rows (and edges) of the agents ``t`` names, or of every agent when a spawn, a link
    or a legacy record moved (``t.all_agents`` / ``t.legacy``); return the names derived."""
    state = v.state
    every = t.all_agents or t.legacy
    names = set(state.agents) | set(v.by_child) if every else set(t.agents)
    ch.agents.extend(agent_rows(v, sorted(names), ch.edges))
    if v.legacy is not None and every:
        rows = legacy_agents(v, v.legacy, ch.edges, ch.retracted_agents)
        ch.agents.extend(rows)
        v.statuses.update((r.id, r.status) for r in rows)
    return names


def _session_row(state: SessionState, unmatched: int) -> SessionRow:
    """The session's row: its merged fields, the main agent's status, the best title (SPEC §4.1),
    the latest turn's error type, the model switched to, ``unmatched`` notices."""
    mev = state.agents.get(state.session_id)
    idle = "completed" if state.ended else "unknown"  # the main agent never ran
    status = main_status(state, mev) if mev is not None and mev.ran else idle
    title = next(((k, state.titles[k][1]) for k in TITLE_KINDS if k in state.titles), None)

    def last(v: tuple[object, ...] | None) -> str | None:
        return str(v[-1]) if v else None

    return SessionRow(
        state.session_id,
        last(state.project_slug),
        last(state.cwd),
        state.first_ts,
        state.last_ts,
        status,
        last(state.git_branch),
        last(state.version),
        title[1] if title else None,
        last(state.slug),
        last(state.entrypoint),
        last(state.end_reason) if state.ended else None,
        title[0] if title else None,
        (state.turn_end[1] or None) if state.turn_end else None,
        last(state.switched_model),
        unmatched,
        state.cost_state.total_usd if state.cost_state is not None else None,
        state.last_prompt[1] if state.last_prompt is not None else None,
        state.root[1] if state.root is not None else None,
        state.forked_from,
        1 if state.fork_start else 0,
        state.team_name,
        state.agent_name,
    )


def _token_usage(v: View, msgs: set[str], ch: Changes) -> None:
    """Append the usage row of each message in ``msgs`` from its best claim (SPEC §4.4)."""
    state = v.state
    for mid in sorted(msgs):
        by_rank = state.msgs[mid]
        rank = max(by_rank)
        ev = by_rank[rank]
        # the best claim names the agent, model and time; the numbers are the per-bucket maximum
        # over every copy in the session (SPEC §4.4: a partial copy never beats the final one)
        merged = copies_max(ev, by_rank.values()) if len(by_rank) > 1 else ev
        agent = v.resolve(ev.agent)
        comp = 1 if agent is not None and agent.startswith(COMPACTION_PREFIX) else 0
        # a message none of whose parts has a valid timestamp: the inferred time (validate.py)
        occurred = ev.occurred if ev.occurred != INFER else occurred_of(state.inferred[mid], state.ts_index)
        if occurred is None:
            # undated: in no bucket; its record's quarantine row counts it (uncounted). A row derived
            # while a dated copy was its best claim goes (this session's: another's claim stays)
            ch.retracted_usage.append(UsageKey(state.session_id, mid))
            continue
        counts = merged.counts()
        prompt = counts[0] + counts[2] + counts[3] + counts[4]  # the long-context tier's measure (SPEC §5.1)
        # id None: SQLite assigns the next rowid, so the table appends in arrival order
        # (a random id rewrote most of its pages at every commit); rows compare by message_id.
        ch.token_usage.append(
            TokenUsageRow(
                None,
                state.session_id,
                agent,
                mid,
                ev.model[1],
                *counts,
                comp,
                occurred,
                rank,
                prompt,
                ev.speed,
                merged.web_search_requests,
                ev.inference_geo,
            )
        )


def _flipped_open_calls(v: View, agents: Iterable[str]) -> set[str]:
    """The open calls of ``agents`` whose ``interrupted`` mark disagrees with their agent's
    ``stopped`` now. An agent whose open calls all agree with its current ``stopped``
    (``state.open_consistent``) is not scanned, so the cost is per agent whose end changed, not per
    open call (a daemon fed 20,000 PreToolUse hooks without results slowed 2.4x before this).

    Mutates ``v.state.open_consistent`` (records the agents scanned; the caller re-derives the
    calls returned, which makes them agree).
    """
    state = v.state
    out: set[str] = set()
    for a in agents:
        calls = state.open_tools.get(a)
        if not calls:
            continue
        stopped = v.stopped(a)
        if state.open_consistent.get(a) != stopped:
            out.update(calls - state.interrupted if stopped else calls & state.interrupted)
            state.open_consistent[a] = stopped
    return out


def _tool_calls(v: View, t: Touched, names: set[str], ch: Changes) -> None:
    """Append the rows of the touched tool calls, and of the open calls of agents whose terminal
    state may have changed (their derived status differs from the one last emitted); a call without
    a result whose agent (or session) stopped is ``interrupted`` (SPEC §4.5).

    Mutates ``v.state.interrupted``.
    """
    state = v.state
    tools = t.tools | state.legacy_tools if t.legacy else t.tools
    every = t.all_agents or t.legacy
    if every or names:
        extra = _flipped_open_calls(v, [*names, ""] if every else names)
        if v.legacy is not None and every:
            extra.update(
                tuid
                for tuid in state.legacy_tools
                if state.tools[tuid].status == RUNNING
                and v.stopped(v.resolve(state.tools[tuid].agent) or "") != (tuid in state.interrupted)
            )
        tools = tools | extra if extra else tools
    for tuid in sorted(tools):
        call = state.tools[tuid]
        agent = v.resolve(call.agent)
        st = call.status
        if st == RUNNING and v.stopped(agent or ""):
            # no result, and its agent (or the session) ended: it can no longer be running (SPEC
            # §4.5). ended_at stays NULL: no evidence says when the call stopped (the agent's last
            # activity or SessionEnd's receipt is the agent's end, not the call's). A result read
            # later still wins (its status ranks above running).
            st = INTERRUPTED
            state.interrupted.add(tuid)
        else:
            state.interrupted.discard(tuid)
        if call.status == RUNNING and state.open_consistent.get(call.agent or "") not in (None, st == INTERRUPTED):
            del state.open_consistent[call.agent or ""]  # its other open calls may disagree: scan next time
        ch.tool_calls.append(
            ToolCallRow(
                state.session_id,
                tuid,
                agent,
                call.name,
                call.started,
                call.ended,
                STATUSES[st],
                call.prompt_id,
                call.reason,
            )
        )
