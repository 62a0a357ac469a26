"""Named projection rows: what the projector emits and the store upserts (SPEC §4, DESIGN.md).

Each row type's fields are the columns of its table, in the order the store binds them
(``ingestd.store.upsert`` builds its SQL from ``_fields``, so the column order is defined here
and nowhere else). They are ``NamedTuple``s: slotted, immutable, read by name, and still plain
tuples for ``executemany``. Times are canonical UTC strings (``ingestd.core.timefmt``).
"""

from __future__ import annotations

from typing import NamedTuple


class SessionRow(NamedTuple):
    """One ``sessions`` row (key ``id``).

    ``title`` / ``title_source`` (``state.TITLE_KINDS``) are None when no record of the session names
    one (a ``summary`` title is joined in by the store, ``ingestd.store.titles``). ``error_type``:
    the StopFailure ``error`` of the main agent's latest turn end, None when that turn ended with a
    Stop (or none arrived). ``switched_to_model``: the ``to_model`` of the latest PostModelSwitch
    (None: no switch; each message's usage keeps the model that answered it).
    ``unmatched_notices``: int, the ``<task-notification>`` task ids that name no agent of the session.
    ``cc_cost_usd``: float | None, the ``totalCostUSD`` of the session's latest ``cost-state`` record
    (Claude Code's own total, US dollars; its models are ``CcModelUsageRow``s), None: no such record.
    ``last_prompt``: str | None, the ``lastPrompt`` of the latest ``last-prompt`` record.
    ``root_uuid``: str | None, the uuid of the first record of the main transcript with a null
    ``parentUuid`` (the root of its chain). ``forked_from``: str | None, the session a record's
    ``forkedFrom.sessionId`` names. ``fork_start``: int, 1 when a SessionStart said ``source:
    "fork"``. The three are a fork's evidence; its parent is joined across sessions (``store.forks``).
    ``team_name`` / ``agent_name``: str | None, the ``teamName`` / ``agentName`` of the main file's
    records (a team member's; its lead is joined when read: ``report.teammates``).
    """

    id: str
    project_slug: str | None
    project_path: str | None
    started_at: str | None
    last_activity_at: str | None
    status: str
    git_branch: str | None
    cc_version: str | None
    title: str | None
    slug: str | None
    entrypoint: str | None
    end_reason: str | None
    title_source: str | None
    error_type: str | None = None
    switched_to_model: str | None = None
    unmatched_notices: int = 0
    cc_cost_usd: float | None = None
    last_prompt: str | None = None
    root_uuid: str | None = None
    forked_from: str | None = None
    fork_start: int = 0
    team_name: str | None = None
    agent_name: str | None = None


class AgentRow(NamedTuple):
    """One ``agents`` row (key ``(session_id, id)``, SPEC §4.2, migrations 0009, 0020).

    ``type``: ``main``, ``subagent`` or ``teammate``. ``parent_agent_id`` is an agent of the same
    session; ``is_compaction`` is 0 / 1; ``name`` the name its spawn gave it (None: unnamed).
    """

    id: str
    session_id: str
    type: str
    subagent_type: str | None
    status: str
    parent_agent_id: str | None
    first_seen_at: str | None
    last_seen_at: str | None
    outcome_cause: str | None
    is_compaction: int
    description: str | None
    name: str | None = None


class EdgeRow(NamedTuple):
    """One ``orchestration_edges`` row (key ``(session_id, child_agent_id)``; ``id`` =
    ``keys.stable_id(session_id, child)``), stamped with the database's identity. ``tool_use_id``:
    the spawning call, None for an edge no call made (a fork: ``ingestd.store.forks``)."""

    id: int
    session_id: str
    parent_agent_id: str
    child_agent_id: str
    source: str
    instance: str
    host_id: str
    created_at: str | None
    tool_use_id: str | None


class TokenUsageRow(NamedTuple):
    """One ``token_usage`` row: one billed message (key ``message_id``; ``id`` None: SQLite assigns it).

    ``input``, ``output``, ``cache_read``, ``cache_write_5m``, ``cache_write_1h``: int, the
    message's tokens per bucket (``derive.BUCKETS`` order, zeros included). ``claim_rank``:
    ``state.RANK_*``. ``prompt_tokens`` (int, tokens: input + cache read + both cache writes, the
    long-context tier's measure), ``speed`` (str, '' for standard), ``web_search_requests`` (int)
    and ``inference_geo`` (str, '' for the geos that bill at 1.0: ``billing.geo_of``) are the
    message's pricing facts (SPEC §5.1).
    """

    id: int | None
    session_id: str
    agent_id: str | None
    message_id: str
    model: str
    input: int
    output: int
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    is_compaction_baseline: int
    occurred_at: str
    claim_rank: int
    prompt_tokens: int
    speed: str
    web_search_requests: int
    inference_geo: str


class ToolCallRow(NamedTuple):
    """One ``tool_calls`` row (key ``(session_id, tool_use_id)``); ``status`` a ``toolstatus.STATUSES`` name.

    ``prompt_id``: the user prompt whose turn made the call (Claude Code's ``prompt_id`` /
    ``promptId``, 2.1.196+), None when no evidence names one. ``reason``: why the call was denied
    (a PermissionDenied hook's ``reason``), else None.
    """

    session_id: str
    tool_use_id: str
    agent_id: str | None
    tool_name: str | None
    started_at: str | None
    ended_at: str | None
    status: str
    prompt_id: str | None = None
    reason: str | None = None


class CompactionRow(NamedTuple):
    """One ``compactions`` row (key ``(session_id, boundary_id)``); ``pre_tokens`` None when not a count;
    ``summary`` the text of the ``isCompactSummary`` user record under the boundary (None: not read)."""

    session_id: str
    boundary_id: str
    agent_id: str | None
    occurred_at: str
    trigger: str | None
    pre_tokens: int | None
    summary: str | None = None


class EventRow(NamedTuple):
    """One ``events`` row (key ``raw_event_id``): a hook delivery, identifiers only; ``prompt_id``
    the body's ``prompt_id`` (None: the event names no prompt)."""

    raw_event_id: int
    session_id: str
    agent_id: str | None
    event_type: str
    occurred_at: str
    prompt_id: str | None = None


class TaskRow(NamedTuple):
    """One ``tasks`` row (key ``(session_id, task_id)``): a task of the session's task list.

    Attributes:
        session_id: str; task_id: str, Claude Code's id (``"1"``, ``"2"``, ... per session).
        subject / description: str | None, ``task_subject`` / ``task_description``.
        teammate: str | None, ``teammate_name`` (an agent-teams member), None for the session's own.
        status: str, ``completed`` once a TaskCompleted arrived, else ``pending``.
        created_at / completed_at: str | None, canonical UTC receipts of TaskCreated / TaskCompleted.
    """

    session_id: str
    task_id: str
    subject: str | None
    description: str | None
    teammate: str | None
    status: str
    created_at: str | None
    completed_at: str | None


class PromptRow(NamedTuple):
    """One ``prompts`` row (key ``(session_id, prompt_id)``): a user prompt of the session.

    Attributes:
        session_id: str; prompt_id: str, Claude Code's ``promptId`` / hooks' ``prompt_id`` (2.1.196+).
        prompt_index: int | None, ``turnPosition.promptIndex`` (2.1.3xx), None when no record says it.
        text: str | None, what the person typed (storable form), None when no record says it (a
            turn a ``<task-notification>`` started, a prompt whose record was not read).
        first_at / last_at: str, canonical UTC, the earliest / latest record or hook naming it.
    """

    session_id: str
    prompt_id: str
    prompt_index: int | None
    text: str | None
    first_at: str | None
    last_at: str | None


class CcModelUsageRow(NamedTuple):
    """One ``cc_model_usage`` row (key ``(session_id, model)``): one model of the session's latest
    ``cost-state`` record, Claude Code's own totals (never usage: ``token_usage`` holds the billed
    messages). Every model any ``cost-state`` of the session named has a row; a model the latest
    record does not name has None in every count.

    Attributes:
        session_id: str; model: str.
        input_tokens / output_tokens / cache_read_tokens / cache_write_5m_tokens /
        cache_write_1h_tokens: int | None, tokens; web_search_requests: int | None.
        cost_usd: float | None, Claude Code's price of them (US dollars).
    """

    session_id: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_5m_tokens: int | None
    cache_write_1h_tokens: int | None
    web_search_requests: int | None
    cost_usd: float | None


class RateLimitSampleRow(NamedTuple):
    """One ``rate_limit_samples`` row (key ``raw_event_id``): a status-line snapshot (SPEC §15,
    ``ingestd.core.statusline``).

    Attributes:
        raw_event_id: int, ``events_raw.id`` of the snapshot's log row.
        session_id: str, the session it was shown in.
        sampled_at: str, canonical UTC, the row's receipt time.
        model: str | None, ``model.id``.
        five_hour_pct / seven_day_pct: float | None, the official ``used_percentage`` (0-100).
        five_hour_resets_at / seven_day_resets_at: str | None, canonical UTC of ``resets_at``.
        five_hour_flag / seven_day_flag: str | None, the window's problem (``statusline.FLAGS``).
        cc_cost_usd: float | None, Claude Code's own session cost estimate (USD).
        context_used_pct: float | None, ``context_window.used_percentage`` (of the last response).
        cc_version: str | None, Claude Code's ``version``.
    """

    raw_event_id: int
    session_id: str
    sampled_at: str
    model: str | None
    five_hour_pct: float | None
    five_hour_resets_at: str | None
    five_hour_flag: str | None
    seven_day_pct: float | None
    seven_day_resets_at: str | None
    seven_day_flag: str | None
    cc_cost_usd: float | None
    context_used_pct: float | None
    cc_version: str | None


class SearchDocRow(NamedTuple):
    """One ``search_docs`` row (key ``doc_id``): a piece of text the full-text index holds
    (``ingestd.core.search``).

    Attributes:
        doc_id: int, ``raw_event_id * search.SEQ_SPAN + seq`` (the index's rowid).
        raw_event_id: int, ``events_raw.id`` of the record. seq: int, its place in the record.
        session_id: str. agent_id: str | None, the record's agent (None: the main agent).
        kind: str, one of ``search.KINDS``. occurred_at: str | None, canonical UTC of the record
            (None: it has no valid timestamp).
        label: str | None, the tool name (``tool``) or the title's record kind (``title``).
        uuid: str | None, the record's uuid (a resumed session's copy of a record shares it).
        text: str, at most ``search.MAX_DOC_CHARS`` characters: written into the full-text index,
            not into ``search_docs`` (the log keeps it).
    """

    doc_id: int
    raw_event_id: int
    seq: int
    session_id: str
    agent_id: str | None
    kind: str
    occurred_at: str | None
    label: str | None
    uuid: str | None
    text: str


class QuarantineRow(NamedTuple):
    """One ``quarantine`` row (key ``(raw_event_id, reason)``): a record not projected whole.

    Attributes:
        raw_event_id: int, ``events_raw.id`` of the record's log row.
        reason: str, one of ``validate.REASONS``.
        session_id: str, the session the row belongs to.
        origin: str, transcript path relative to its root (``hook`` for hooks).
        origin_offset: int | None, byte offset of the line.
        detail: str, one sentence: the field, the refused value (shortened) and what was done.
    """

    raw_event_id: int
    reason: str
    session_id: str
    origin: str
    origin_offset: int | None
    detail: str


class SummaryRow(NamedTuple):
    """One ``summaries`` row as the projector knows it (key ``(origin, origin_gen, origin_offset)``).

    A ``summary`` record of the session's files; its session is the one of the record
    ``leaf_uuid`` names (``ingestd.store.titles`` fills ``leaf_session`` / ``leaf_at``).
    """

    origin: str
    origin_gen: int
    origin_offset: int
    file_session: str
    leaf_uuid: str
    summary: str


class AgentKey(NamedTuple):
    """An agent's identity (SPEC §4.2): a retracted provisional 1.0.x sidechain agent."""

    session_id: str
    id: str


class Checkpoint(NamedTuple):
    """Tail state of one file (``ingest_checkpoints``, key ``(root, origin)``), committed with the
    rows read from it (SPEC §7). Not a WAL checkpoint (``ingestd.store.walcheckpoint``).

    Attributes:
        root: str, the projects root (absolute path).
        origin: str, the file's path relative to ``root``.
        session_id: str | None, the session the path names.
        origin_gen: int, rewrite generation.
        committed_offset: int, bytes, end of the last complete line read.
        size: int, bytes, file size at read time; mtime_ns: int, ns; inode: int.
        head_hash: str, hash of the bytes just before ``committed_offset``.
        ingest_revision: int, ``revision.INGEST_REVISION`` when read.
        updated_at: str, canonical UTC.
    """

    root: str
    origin: str
    session_id: str | None
    origin_gen: int
    committed_offset: int
    size: int
    mtime_ns: int
    inode: int
    head_hash: str
    ingest_revision: int
    updated_at: str


class OtelRequestRow(NamedTuple):
    """One ``otel_requests`` row (key ``(session_id, request_key)``): an ``api_request`` or
    ``api_error`` event of Claude Code's own telemetry, reconciled with the transcripts
    (``ingestd.core.otelfold``).

    Attributes:
        session_id: str. request_key: str, ``<timeUnixNano>:<event.sequence>``, the event in its session.
        raw_event_id: int, ``events_raw.id`` of its log row (the smallest, were it logged twice).
        event: str, ``api_request`` or ``api_error``. occurred_at: str, canonical UTC.
        prompt_id / request_id / query_source / model: str | None, its attributes.
        agent_id: str | None, the agent its usage is attributed to (None: the event names none).
        input / output / cache_read / cache_write_5m / cache_write_1h: int, tokens, the event's
            figures in the five buckets (``cache_creation_tokens`` in 5m when no split is given).
        split_known: int, 1 when the event gave the 5m / 1h split, 0 when the remainder rule put
            ``cache_creation_tokens`` in 5m (SPEC §4.4).
        cc_cost_usd: float | None, Claude Code's ``cost_usd`` of the request.
        duration_ms: int | None.
        message_id: str | None, the transcript message the event is evidence of (None: none matched).
        matched_by: str | None, how (``otelfold.MATCHES``).
        usage_id: str | None, the ``token_usage`` message_id of the event's own row (unmatched
            ``api_request`` only: usage no transcript shows).
        agrees: int | None, matched: 1 when the tokens equal the message's, else 0; None unmatched.
        mismatch: str | None, which figures differ (``output 40 != 41; ...``).
        error: str | None, an ``api_error``'s status and error.
    """

    session_id: str
    request_key: str
    raw_event_id: int
    event: str
    occurred_at: str
    prompt_id: str | None
    request_id: str | None
    query_source: str | None
    model: str | None
    agent_id: str | None
    input: int
    output: int
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    split_known: int
    cc_cost_usd: float | None
    duration_ms: int | None
    message_id: str | None
    matched_by: str | None
    usage_id: str | None
    agrees: int | None
    mismatch: str | None
    error: str | None


class OtelMetricRow(NamedTuple):
    """One ``otel_metric_points`` row (key ``raw_event_id``): a data point of Claude Code's own
    metrics, kept as sent (deltas are summed by readers, never overwritten, never added to usage).

    Attributes:
        raw_event_id: int, ``events_raw.id``. session_id: str.
        name: str, e.g. ``claude_code.cost.usage``. unit: str.
        attributes: str, JSON object of the point's attributes (``session.id`` and ``user.id`` left out).
        start_at / end_at: str | None, canonical UTC of the interval.
        temporality: int | None, 1 delta, 2 cumulative.
        value: float | None, the number (None: a histogram or summary point).
    """

    raw_event_id: int
    session_id: str
    name: str
    unit: str
    attributes: str
    start_at: str | None
    end_at: str | None
    temporality: int | None
    value: float | None


class UsageKey(NamedTuple):
    """A ``token_usage`` row to delete: the own row of an OTel event a transcript message now explains."""

    session_id: str
    message_id: str
