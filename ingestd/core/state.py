"""The projector's per-session fold state (SPEC §4), pure data.

Every field is a join of evidence (min, max, union, precedence rank), so the state
after folding a set of log rows does not depend on their order or batching; the
projection rows are derived from the state alone (``ingestd.core.derive``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

# Claim precedence of one message's usage evidence (SPEC §4.4, DESIGN.md "token_usage
# across sessions"): a direct record in a main transcript beats a direct record in a
# sidechain file, which beats an agent_progress copy.
RANK_COPY = 0
RANK_SIDECHAIN = 1
RANK_MAIN = 2


def claim_order(claim_rank: int, occurred_at: str, holder: str) -> tuple[int, str, str]:
    """The sort key of a claim on a message's usage, best first: the higher ``claim_rank``, then the
    earlier ``occurred_at`` (canonical UTC), then the smaller ``holder`` (the session id; the host id
    between hosts). The stores' upserts apply the same order (``ingestd.store.upsert.token_upsert``)."""
    return (-claim_rank, occurred_at, holder)


# Edge provenance, better first wins (SPEC §4.3; DESIGN.md "Spawns"): the subagent's own
# ``.meta.json`` naming its spawn's tool_use id beats the spawn's result naming the child.
EDGE_RANK = {
    "sidecar": 6,
    "tool_use": 5,
    "task_notification": 4,
    "queue_operation": 3,
    "directory": 2,
    "legacy_explore": 1,
}

# Spawn tools (SPEC §4.3): `Task` (to 2.1.62), `Agent` (2.1.72+), `Workflow`; matched by the
# tool_use name in transcripts and by `tool_name` in PreToolUse / PostToolUse hooks.
SPAWN_TOOLS = frozenset(("Task", "Agent", "Workflow"))

# Title kinds, best first (SPEC §4.1): a user-set `custom-title` record, the hook's `session_title`
# (Claude Code's current name for the session, custom or generated), an `ai-title` record; a
# `summary` (resolved through its leafUuid, ``ingestd.store.titles``) comes after all three.
TITLE_KINDS = ("custom-title", "session_title", "ai-title")

LEGACY_PREFIX = "~"  # placeholder agent of a 1.0.x in-file sidechain record: "~" + record uuid


@dataclass(slots=True)
class AgentEv:
    """Evidence about one agent.

    Attributes:
        first_ts / last_ts: str | None, canonical UTC, min / max activity time.
        ran: bool, a transcript record, a SubagentStart or a tool event shows it ran.
        latest: tuple (ts, status) | None, the newest non-terminal status evidence.
        completed: bool, terminal-success evidence (SubagentStop, task-notification).
        last_turn: tuple (ts, kind) | None, the newest turn of the agent's own transcript (max;
            ``toolstatus.turn_kind``), or a hook's failure evidence: how its run ended, if it did.
        hook_type: str | None, ``agent_type`` from a hook (max non-empty).
        meta_type: str | None, ``agentType`` from a ``.meta.json`` sidecar (max).
        meta_desc / name: str | None, its ``description`` / ``name`` (max).
        root_prompt: tuple (ts, prompt) | None, the first user prompt of the agent's own file.
        has_assistant: bool, at least one assistant record (a compaction call that ran).
    """

    first_ts: str | None = None
    last_ts: str | None = None
    ran: bool = False
    latest: tuple[str, str] | None = None
    completed: bool = False
    last_turn: tuple[str, str] | None = None
    hook_type: str | None = None
    meta_type: str | None = None
    meta_desc: str | None = None
    name: str | None = None
    root_prompt: tuple[str, str] | None = None
    has_assistant: bool = False


@dataclass(slots=True)
class Spawn:
    """A spawn ``tool_use`` (Task / Agent / Workflow).

    Attributes:
        agent: str, the agent whose record holds it (may be a legacy placeholder).
        ts: str, the record's timestamp.
        subagent_type, description, prompt: from ``input`` (None when absent).
        team: str | None, the input's ``team_name`` (agent teams: the spawn is a teammate's).
        name: str | None, the input's ``name`` (what SendMessage and ``teammate_name`` call it).
    """

    agent: str
    ts: str
    subagent_type: str | None
    description: str | None
    prompt: str | None
    team: str | None = None
    name: str | None = None


def split_writes(agg: int, e5: int, e1: int) -> tuple[int, int]:
    """(cache_write_5m, cache_write_1h), tokens, of the raw write fields (SPEC §4.4): the
    breakdown, and in 5m what of the aggregate ``agg`` it leaves unexplained (5 minutes is the API's
    default TTL)."""
    rest = agg - e5 - e1
    return e5 + (rest if rest > 0 else 0), e1


@dataclass(slots=True)
class MsgEv:
    """One message's usage evidence at one claim rank, each field a join over its streamed parts.

    Attributes:
        input / output / cache_read: int, tokens, per-bucket max.
        model: tuple (output tokens, model), max: the model of the part with the largest output.
        occurred: str, canonical UTC min, or ``validate.INFER`` while no part's time is valid.
        agent: str, min: the agent (or legacy placeholder) whose record holds it.
        speed: str, max ('' when absent); web_search_requests: int, max (streamed parts repeat it).
        inference_geo: str, max: ``billing.geo_of`` ('' for the geos that bill at 1.0).
        write_agg / write_5m / write_1h: int, tokens, max of the raw ``cache_creation_input_tokens``
            and its 5m / 1h breakdown over the parts; the cache_write buckets are split from them
            when counted (``counts``), never joined split: a part with only the aggregate (100 -> 5m
            100) and one with the breakdown (60/40) would count 5m 100 + 1h 40 = 140 for 100 billed.
    """

    input: int
    output: int
    cache_read: int
    model: tuple[int, str]
    occurred: str
    agent: str
    speed: str
    web_search_requests: int
    write_agg: int
    write_5m: int
    write_1h: int
    inference_geo: str = ""

    def counts(self) -> tuple[int, int, int, int, int]:
        """The five bucket counts in ``derive.BUCKETS`` order, tokens."""
        w5, w1 = split_writes(self.write_agg, self.write_5m, self.write_1h)
        return (self.input, self.output, self.cache_read, w5, w1)


def copies_max(best: MsgEv, evs: Iterable[MsgEv]) -> MsgEv:
    """``best``'s evidence with each number the maximum over ``evs`` (every claim rank's copy of
    one message): the raw cache-write fields joined, split when counted, as for streamed parts."""
    out = replace(best)
    for e in evs:
        out.input = max(out.input, e.input)
        out.output = max(out.output, e.output)
        out.cache_read = max(out.cache_read, e.cache_read)
        out.write_agg = max(out.write_agg, e.write_agg)
        out.write_5m = max(out.write_5m, e.write_5m)
        out.write_1h = max(out.write_1h, e.write_1h)
        out.web_search_requests = max(out.web_search_requests, e.web_search_requests)
    return out


@dataclass(slots=True)
class ToolEv:
    """One tool call's evidence (``touch.note_tool``), every field a join.

    Attributes:
        agent: str | None, the calling agent (a named one beats a default, then the smaller id).
        name: str | None, max; started / ended: str | None, canonical UTC min.
        status: int, a ``toolstatus`` rank, max. agent_rank: int, 1 named, 0 a default, -1 none.
        prompt_id: str | None, the prompt whose turn made the call (a hook's ``prompt_id``, a
            transcript tool_result's ``promptId``), min. reason: str | None, why it was denied (a
            PermissionDenied hook's ``reason``), max.
    """

    agent: str | None
    name: str | None
    started: str | None
    ended: str | None
    status: int
    agent_rank: int
    prompt_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class OtelCompactionEv:
    """One successful ``compaction`` event of Claude Code's telemetry (``ingestd.core.otelfold``).

    Attributes:
        raw_event_id: int, its log row. occurred: str, canonical UTC; occurred_ns: int.
        agent: str, the agent that compacted (its ``agent_id``, else the main agent).
        trigger: str | None, ``auto`` / ``manual``. pre_tokens: int | None, tokens before.
    """

    raw_event_id: int
    occurred: str
    occurred_ns: int
    agent: str
    trigger: str | None
    pre_tokens: int | None


@dataclass(frozen=True, slots=True)
class OtelEv:
    """One ``api_request`` / ``api_error`` event of Claude Code's telemetry (``ingestd.core.otelfold``).

    Attributes:
        raw_event_id: int, its log row. event: str. occurred: str, canonical UTC; occurred_ns: int.
        prompt_id / request_id / query_source / agent / error: str | None.
        sequence: int | None, ``event.sequence``. model: str ('' when absent).
        input / output / cache_read: int, tokens. write_agg / write_5m / write_1h: int, tokens,
            ``cache_creation_tokens`` and its 5m / 1h split. split_known: bool, the split was given.
        cost_usd: float | None. duration_ms: int | None. speed: str ('' standard).
        fp: (model, input, output, cache_read, cache writes), what ``otelfold.match`` compares.
    """

    raw_event_id: int
    event: str
    occurred: str
    occurred_ns: int
    prompt_id: str | None
    request_id: str | None
    query_source: str | None
    agent: str | None
    sequence: int | None
    model: str
    input: int
    output: int
    cache_read: int
    write_agg: int
    write_5m: int
    write_1h: int
    split_known: bool
    cost_usd: float | None
    duration_ms: int | None
    speed: str
    error: str | None
    fp: tuple[str, int, int, int, int] = ("", 0, 0, 0, 0)

    def counts(self) -> tuple[int, int, int, int, int]:
        """The five bucket counts (``derive.BUCKETS`` order), the remainder rule for the writes."""
        w5, w1 = split_writes(self.write_agg, self.write_5m, self.write_1h)
        return (self.input, self.output, self.cache_read, w5, w1)


class CompactionEv(NamedTuple):
    """A ``compact_boundary`` record: the agent, its time, trigger (auto / manual) and preTokens."""

    agent: str
    ts: str
    trigger: str | None
    pre_tokens: int | None


@dataclass(slots=True)
class TaskEv:
    """One task of the session's task list (TaskCreated / TaskCompleted hooks), every field a join.

    Attributes:
        subject / description / teammate: str | None, ``task_subject`` / ``task_description`` /
            ``teammate_name`` (max non-empty).
        created_at / completed_at: str | None, canonical UTC, the earliest TaskCreated /
            TaskCompleted receipt.
    """

    subject: str | None = None
    description: str | None = None
    teammate: str | None = None
    created_at: str | None = None
    completed_at: str | None = None


@dataclass(slots=True)
class PromptEv:
    """One user prompt of the session (its ``promptId`` / ``prompt_id``, 2.1.196+), every field a join.

    Attributes:
        first_at / last_at: str | None, canonical UTC, the earliest / latest time of a record or
            hook naming the prompt (a transcript record's timestamp, a hook's receipt).
        index: int | None, ``turnPosition.promptIndex`` of a user record (2.1.3xx), min.
        text: (ts, text) | None, min: what the person typed (``activity.prompt_text`` of a main-thread
            user record, a UserPromptSubmit hook's ``prompt``), None when no record says it.
    """

    first_at: str | None = None
    last_at: str | None = None
    index: int | None = None
    text: tuple[str, str] | None = None


class ModelTotals(NamedTuple):
    """One model's entry of a ``cost-state`` record's ``modelUsage``: Claude Code's own totals.

    Attributes:
        input_tokens / output_tokens / cache_read_tokens / cache_write_5m_tokens /
        cache_write_1h_tokens: int | None, tokens (None: absent or not a count).
        web_search_requests: int | None. cost_usd: float | None, US dollars (Claude Code's price).
    """

    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_5m_tokens: int | None
    cache_write_1h_tokens: int | None
    web_search_requests: int | None
    cost_usd: float | None


# A record's place in the log: (generation, byte offset, origin), for records without a timestamp.
PlaceKey = tuple[int, int, str]


class CostState(NamedTuple):
    """The latest ``cost-state`` record of the session (by its place in the log, ``PlaceKey``).

    Attributes:
        place: PlaceKey. total_usd: float | None, ``totalCostUSD``.
        models: tuple of (model, ``ModelTotals``), sorted by model.
    """

    place: PlaceKey
    total_usd: float | None
    models: tuple[tuple[str, ModelTotals], ...]


class SpawnResult(NamedTuple):
    """A spawn's ``tool_result`` (or its hook's PostToolUse): ``is_error`` 1 / 0, the error's cause
    (``toolstatus.spawn_cause``), the result's time. Ordered so the join keeps an error over a
    success, then the larger cause, then the later time (``touch.note_result``)."""

    is_error: int
    cause: str | None
    ts: str


# A title candidate's place: (generation, byte offset, origin) of a record, or (receipt time,) of a hook.
TitleKey = tuple[int, int, str] | tuple[str]


@dataclass(slots=True)
class SessionState:
    """Fold state of one session (see module docstring). Mutated in place by ``fold``."""

    session_id: str
    first_ts: str | None = None
    last_ts: str | None = None
    cwd: tuple[int, str, str] | None = None  # (rank, ts, cwd) min: a record's cwd beats a hook's
    # (rank, slug) min: a transcript path's folder (rank 0) beats a hook's transcript_path (rank 1);
    # among equals the smaller name. A join, so the slug does not depend on arrival order.
    project_slug: tuple[int, str] | None = None
    git_branch: tuple[str, str] | None = None  # (ts, value) max
    version: tuple[str, str] | None = None
    slug: tuple[str, str] | None = None
    entrypoint: tuple[str, str] | None = None
    # title kind -> (key, text) max, the latest candidate of each kind (SPEC §4.1): a `custom-title`
    # record, a hook's `session_title`, an `ai-title` record (``TITLE_KINDS``, best first). Records
    # carry no timestamp: their key is their place in the log (generation, byte offset, origin); a
    # hook's is its receipt time. `summary` records are not here: a summary belongs to the session of
    # the record its leafUuid names, another session's fold (``summaries``, ``ingestd.store.titles``).
    titles: dict[str, tuple[TitleKey, str]] = field(default_factory=dict)
    # (origin, origin_gen, origin_offset) -> (leafUuid, summary) of this session's files' summary records
    summaries: dict[tuple[str, int, int], tuple[str, str]] = field(default_factory=dict)
    end_reason: tuple[str, str] | None = None
    # (receipt, kind) max of the main agent's turn ends: "" for a Stop, else a StopFailure's
    # ``error`` (``rate_limit``, ``overloaded``, ...; "unknown" when it names none): the session's
    # ``error_type`` is the latest turn's, None when that turn ended well
    turn_end: tuple[str, str] | None = None
    switched_model: tuple[str, str] | None = None  # (receipt, to_model) max of PostModelSwitch hooks
    tasks: dict[str, TaskEv] = field(default_factory=dict)  # task_id -> its evidence
    # the ``teammate_name`` of every TeammateIdle / TaskCreated / TaskCompleted: an agent so named
    # is a teammate (DESIGN.md "Teammates")
    teammates: set[str] = field(default_factory=set)
    # compact_boundary uuid -> (ts, summary) min of the ``isCompactSummary`` user record under it
    compact_summaries: dict[str, tuple[str, str]] = field(default_factory=dict)
    prompts: dict[str, PromptEv] = field(default_factory=dict)  # prompt id -> its evidence
    # the latest ``cost-state`` record (max by place) and every model any of them named (union)
    cost_state: CostState | None = None
    cost_models: set[str] = field(default_factory=set)
    last_prompt: tuple[PlaceKey, str] | None = None  # (place, lastPrompt) max of ``last-prompt`` records
    # Forks (DESIGN.md "Forks"): the (place, uuid) min of the main file's records with a uuid and a
    # null parentUuid (the root its chain starts from; a fork's copies start at its parent's
    # root), the min ``forkedFrom.sessionId`` of a record copied by ``/branch``, and whether a
    # SessionStart said ``source: "fork"``
    root: tuple[PlaceKey, str] | None = None
    forked_from: str | None = None
    fork_start: bool = False
    # Agent teams (DESIGN.md "Teammates"): the min ``teamName`` and the min ``agentName`` of the
    # main file's records (every record of a team member names them: 2.1.332 bundle). A session
    # run as a teammate in its own terminal (tmux mode) has both; its lead is another session,
    # joined when read (``ingestd.report.teammates``)
    team_name: str | None = None
    agent_name: str | None = None
    end_at: str | None = None  # the latest SessionEnd's receipt
    start_at: str | None = None  # the latest SessionStart's receipt (startup, resume, clear, compact)
    agents: dict[str, AgentEv] = field(default_factory=dict)
    msgs: dict[str, dict[int, MsgEv]] = field(default_factory=dict)  # message key -> claim rank -> evidence
    # Message identity is ``message.id`` + ``requestId`` (SPEC §4.4), keyed by the id alone while
    # an id has been seen with one requestId (every record Claude Code writes): ``msg_req`` is that
    # requestId ('' for none); ``split_msgs`` the ids seen with several (a gateway that returns one
    # id for every call), whose messages are keyed ``usagefold.request_key``; ``retract_msgs`` the
    # keys derived under an id before it split, deleted by the refold's derive.
    msg_req: dict[str, str] = field(default_factory=dict)
    split_msgs: set[str] = field(default_factory=set)
    retract_msgs: set[str] = field(default_factory=set)
    spawns: dict[str, Spawn] = field(default_factory=dict)  # from transcript tool_use blocks
    # from PreToolUse / PostToolUse hooks of a spawn tool (every field a join); a transcript spawn of
    # the same tool_use id is better evidence and replaces it (``derive.spawns_of``)
    hook_spawns: dict[str, Spawn] = field(default_factory=dict)
    links: dict[str, tuple[int, str]] = field(default_factory=dict)  # tool_use_id -> (rank, child)
    results: dict[str, SpawnResult] = field(default_factory=dict)  # spawn tool_use_id -> its result
    tools: dict[str, ToolEv] = field(default_factory=dict)  # tool_use_id -> evidence (touch.note_tool)
    # agent (as in ``tools``, "" for none) -> its calls whose status is still ``running``: an index of ``tools``
    # (``touch.note_tool``), so an agent that turns terminal re-derives only its open calls
    open_tools: dict[str, set[str]] = field(default_factory=dict)
    compactions: dict[str, CompactionEv] = field(default_factory=dict)  # boundary record uuid -> its record
    legacy_parent: dict[str, str | None] = field(default_factory=dict)  # sidechain uuid -> parentUuid
    legacy_ts: dict[str, str] = field(default_factory=dict)
    legacy_prompt: dict[str, str] = field(default_factory=dict)  # root uuid -> prompt
    legacy_msgs: set[str] = field(default_factory=set)
    legacy_tools: set[str] = field(default_factory=set)
    # agent (a notice's task id) -> (ts, status) max of its task-notifications (``blocks.notice``)
    notified: dict[str, tuple[str, str]] = field(default_factory=dict)
    legacy_emitted: set[str] = field(default_factory=set)  # legacy agent ids already derived
    # open calls last derived ``interrupted`` (their agent or session ended; ``derive``): which
    # rows must be re-derived when an agent's terminal state changes, never an input of a row
    interrupted: set[str] = field(default_factory=set)
    # agent (a key of ``open_tools``) -> b: every one of its open calls is in ``interrupted`` iff b
    # (``derive``). An agent whose ``stopped`` still equals b needs no scan of its open calls, so a
    # fold costs the same at the 10,000th open call as at the first; absent: scan.
    open_consistent: dict[str, bool] = field(default_factory=dict)
    # Inferred times (``ingestd.core.validate``): the files (origin, gen) holding a record whose
    # timestamp is refused, each with its sorted index of valid timestamps ([offsets], [times]);
    # only such files are indexed, so the state stays small. A refused timestamp met in a file
    # already folded without its index sets ``needs_refold``: the fold then folds the session
    # again from its whole log into ``validate.refold_state`` (these files indexed from the start).
    ts_index: dict[tuple[str, int], tuple[list[int], list[str]]] = field(default_factory=dict)
    seen_origins: set[tuple[str, int]] = field(default_factory=set)
    # (origin, gen) -> ([offsets], [message ids]) of the records there whose timestamp is refused,
    # in offset order like ``ts_index`` (a message id is '' until its usage is folded): a new valid
    # timestamp re-touches only the refused records between it and its neighbours in ``ts_index``
    bad_ts: dict[tuple[str, int], tuple[list[int], list[str]]] = field(default_factory=dict)
    # message id -> {((origin, gen), offset): None} of its parts whose timestamp is refused or
    # absent (``validate.occurred_of``: never their read time)
    inferred: dict[str, dict[tuple[tuple[str, int], int], str | None]] = field(default_factory=dict)
    needs_refold: bool = False
    # Claude Code's telemetry (``ingestd.core.otelfold``): request key -> its api_request /
    # api_error event (the smaller log id, were it logged twice)
    otel: dict[str, OtelEv] = field(default_factory=dict)
    # event key -> a successful compaction event (the smaller log id, were it logged twice)
    otel_compactions: dict[str, OtelCompactionEv] = field(default_factory=dict)
    # message.uuid of an assistant_response -> (prompt.id, event.sequence), min
    otel_responses: dict[str, tuple[str, int]] = field(default_factory=dict)
    # the transcripts' side of the join: requestId -> message id, assistant record uuid -> message
    # id (the smaller id, were one named twice)
    req_ids: dict[str, str] = field(default_factory=dict)
    uuids: dict[str, str] = field(default_factory=dict)
    # request key -> (message id, matched_by) last derived (None, None: its own usage row): which
    # events must be derived again when a match moves, never an input of a row
    otel_last: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    # message id -> ((model, input, output, cache_read, cache writes), occurred ns | None): what the
    # figures match of ``otelfold.match`` compares, kept (only while the session has telemetry) so
    # a fold re-derives the messages it touched, not every message of the session
    otel_fp: dict[str, tuple[tuple[str, int, int, int, int], int | None]] = field(default_factory=dict)
    # the api_request keys of ``otel`` in (time, key) order, None until asked for again after a change
    otel_order: list[str] | None = None
    # what the last full match left: the messages it claimed, the figures its unmatched requests
    # look for (None: no match yet). A fold touching no message that these, a request id or an
    # assistant_response name cannot move the match (``otelfold.derive_otel`` skips it).
    otel_claimed: set[str] = field(default_factory=set)
    otel_wanted: set[tuple[str, int, int, int, int]] | None = None

    @property
    def ended(self) -> bool:
        """The session has ended: a SessionEnd, and no SessionStart received after it.

        A resumed session keeps its id (corpus/hooks/task-patterns/SessionStart.jsonl: ``source``
        "resume" for 263940d8…, the linear-agent transcript's session), so a SessionStart after the
        latest SessionEnd reopens it; before, one SessionEnd left it ``completed`` for good. A
        function of the two latest receipts, so the order they arrive in does not matter.
        """
        return self.end_at is not None and (self.start_at is None or self.start_at <= self.end_at)
