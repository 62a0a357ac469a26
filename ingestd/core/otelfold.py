"""Claude Code's own telemetry folded into the session and reconciled with its transcripts (SPEC §17). Pure.

A logged OTLP record (``ingestd.core.otlp``) of a session is folded here:

- ``api_request`` and ``api_error`` events are kept by their request key (``<timeUnixNano>:<event.sequence>``);
- ``assistant_response`` names the transcript record of its answer (``message.uuid``);
- ``tool_result`` ends a tool call (completed or failed), a ``tool_decision`` of ``reject`` denies
  one (``touch.note_tool``: the same joins as hooks and transcripts);
- ``subagent_completed`` (sent when a subagent's run finishes, with its ``agent_id``: 2.1.332
  bundle) is stop evidence of that agent, as a SubagentStop: it completes an agent other evidence
  shows ran, never creates one, and a failure ending still wins (``toolstatus``). Claude Code
  stamps ``agent_id`` as ``a`` plus the id's 16 hex digits, which is the transcript's ``agentId``
  for an ordinary subagent; a labelled id (``acompact-…``) is stamped without its label and joins
  no agent;
- a successful ``compaction`` event (``trigger``, ``pre_tokens``) is evidence of a compaction:
  explained by a transcript ``compact_boundary`` (``match_compactions``: same trigger and
  tokens before, the nearest within ``COMPACTION_WINDOW_NS``) it adds nothing, else it is a
  ``compactions`` row of its own (boundary id ``otel:<key>``) until a boundary explains it
  (``Changes.retracted_compactions``), so a compaction is never counted twice;
- metric data points become ``otel_metric_points`` rows, kept as sent (summed by readers, shown
  beside the exact figures, never added to them);
- every other event stays in the log only.

Reconciliation (``match``, a function of the whole state, so any order of transcript lines and
events gives the same answer): an ``api_request`` is evidence *of a transcript message* when

1. its ``request_id`` is the message's ``requestId`` (``request_id``);
2. else an ``assistant_response`` whose ``message.uuid`` is a record of the message follows it in
   the same prompt (the request of that prompt with the largest ``event.sequence`` below the
   response's, same model; ``message_uuid``);
3. else the message has the same model and the same input, output, cache-read and cache-write
   totals, is not claimed by another event and is the nearest such message within ``WINDOW_NS``
   (``tokens``; a fingerprint: what a tool-use turn without ``request_id`` and without an
   ``assistant_response`` leaves to join on, Claude Code 2.1.332 against an API sending no
   ``request-id``).

A matched event is never counted: its figures are compared with the message's (``agrees``,
``mismatch``). An unmatched one (an auxiliary call no transcript shows, a transcript not yet read
or deleted) is usage of its own, a ``token_usage`` row with message id ``otel:<session>:<key>``
and ``claim_rank`` ``RANK_OTEL``, its 5m / 1h split from the event where given, else the remainder
rule (``split_known`` 0); when a transcript message later explains it, that row is retracted
(``Changes.retracted_usage``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

from ingestd.core import otlp
from ingestd.core.records import LogRow
from ingestd.core.rows import CompactionRow, OtelMetricRow, OtelRequestRow, TokenUsageRow, UsageKey
from ingestd.core.state import MsgEv, OtelCompactionEv, OtelEv, SessionState
from ingestd.core.timefmt import parse
from ingestd.core.toolstatus import COMPLETED, DENIED, FAILED
from ingestd.core.touch import Touched, agent_ev, note_tool
from ingestd.core.usagefold import count

RANK_OTEL = -1  # below every transcript claim (``state.RANK_*``): usage only the telemetry shows
USAGE_PREFIX = "otel:"
REQUEST_EVENTS = ("api_request", "api_error")
MATCHES = ("request_id", "message_uuid", "tokens")
WINDOW_NS = 30 * 60 * 10**9  # a fingerprint match lies within 30 minutes of the event
COMPACTION_WINDOW_NS = 10 * 60 * 10**9  # a boundary explaining a compaction event lies within 10 minutes
BOUNDARY_PREFIX = "otel:"  # the boundary id of a compaction only the telemetry shows
_PRIVATE = ("session.id", "user.id")


def usage_id(session_id: str, key: str) -> str:
    """The ``token_usage`` message id of an unmatched event's own row."""
    return f"{USAGE_PREFIX}{session_id}:{key}"


def _s(attrs: dict[str, Any], name: str) -> str | None:
    v = attrs.get(name)
    return otlp.text_or_none(v)


def _n(attrs: dict[str, Any], name: str) -> int:
    v = attrs.get(name)
    return count(v if isinstance(v, int) else otlp.as_int(v))


def _ns(row: LogRow, rec: dict[str, Any]) -> tuple[str, int]:
    """The record's time as (canonical UTC, ns): ``timeUnixNano``, else the receipt time."""
    n = otlp.as_int(rec.get("timeUnixNano"))
    t = otlp.time_of(n)
    if t is not None and n is not None:
        return t, n
    dt = parse(row.received_at)
    return row.received_at, int(dt.timestamp() * 1e9) if dt is not None else 0


def fold_otlp(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched, metrics: list[OtelMetricRow]) -> None:
    """Fold one logged OTLP record or data point of ``state``'s session (see the module docstring)."""
    if row.origin == otlp.origin_of(otlp.METRICS):
        m = _metric_row(row, obj)
        if m is not None:
            metrics.append(m)
        return
    rec = obj.get("logRecord")
    if not isinstance(rec, dict):
        return
    attrs = otlp.attrs_of(rec.get("attributes"))
    name = otlp.event_name(rec, attrs)
    occurred, ns = _ns(row, rec)
    if name in REQUEST_EVENTS:
        seq = otlp.as_int(attrs.get("event.sequence"))
        key = f"{ns}:{seq}" if seq is not None else f"{ns}:r{row.id}"
        ev = _request_ev(row, name, occurred, ns, attrs, seq, state.session_id)
        cur = state.otel.get(key)
        if cur is None or ev.raw_event_id < cur.raw_event_id:
            state.otel[key] = ev
            state.otel_order = None
        t.otel.add(key)
    elif name == "assistant_response":
        uuid, pid = _s(attrs, "message.uuid"), _s(attrs, "prompt.id")
        seq = otlp.as_int(attrs.get("event.sequence"))
        if uuid is not None and pid is not None and seq is not None:
            prev = state.otel_responses.get(uuid)
            if prev is None or (pid, seq) < prev:
                state.otel_responses[uuid] = (pid, seq)
                t.otel.add("")
    elif name == "subagent_completed":
        aid = _s(attrs, "agent_id")
        if aid is not None and aid != state.session_id:
            agent_ev(state, aid).completed = True
            t.agents.add(aid)
    elif name == "compaction":
        ok = attrs.get("success")
        if ok is not True and ok != "true":
            return
        seq = otlp.as_int(attrs.get("event.sequence"))
        key = f"{ns}:{seq}" if seq is not None else f"{ns}:r{row.id}"
        trig = _s(attrs, "trigger")
        pre = otlp.as_int(attrs.get("pre_tokens"))
        comp = OtelCompactionEv(
            row.id,
            occurred,
            ns,
            _s(attrs, "agent_id") or state.session_id,
            trig if trig in ("auto", "manual") else None,
            count(pre) if pre is not None else None,
        )
        cur_c = state.otel_compactions.get(key)
        if cur_c is None or comp.raw_event_id < cur_c.raw_event_id:
            state.otel_compactions[key] = comp
        t.otel_compactions = True
    elif name in ("tool_result", "tool_decision"):
        tuid = _s(attrs, "tool_use_id")
        if tuid is None:
            return
        tool, pid = _s(attrs, "tool_name"), _s(attrs, "prompt.id")
        if name == "tool_result":
            ok = attrs.get("success")
            status = COMPLETED if ok is True or ok == "true" else FAILED
            note_tool(state, t, tuid, agent_named=False, name=tool, ended=occurred, status=status, prompt_id=pid)
        elif attrs.get("decision") == "reject":
            note_tool(state, t, tuid, agent_named=False, name=tool, ended=occurred, status=DENIED, prompt_id=pid)


def _request_ev(
    row: LogRow, name: str, occurred: str, ns: int, attrs: dict[str, Any], seq: int | None, sid: str
) -> OtelEv:
    """An ``api_request`` / ``api_error`` event's evidence."""
    qs = _s(attrs, "query_source")
    agent = _s(attrs, "agent.id") or _s(attrs, "agent_id")
    if agent is None and not (qs or "").startswith(("agent", "subagent")):
        agent = sid  # the main thread's calls, the session's auxiliary ones: the main agent
    split = "cache_creation_5m_tokens" in attrs or "cache_creation_1h_tokens" in attrs
    cost = attrs.get("cost_usd")
    speed = _s(attrs, "speed")
    error = None
    if name == "api_error":
        parts = [str(attrs.get(k)) for k in ("status_code", "error") if attrs.get(k) not in (None, "")]
        error = otlp.text_or_none(" ".join(parts)) or "error"
    ev = OtelEv(
        row.id,
        name,
        occurred,
        ns,
        _s(attrs, "prompt.id"),
        _s(attrs, "request_id"),
        qs,
        agent,
        seq,
        _s(attrs, "model") or "",
        _n(attrs, "input_tokens"),
        _n(attrs, "output_tokens"),
        _n(attrs, "cache_read_tokens"),
        _n(attrs, "cache_creation_tokens"),
        _n(attrs, "cache_creation_5m_tokens"),
        _n(attrs, "cache_creation_1h_tokens"),
        split,
        float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0 else None,
        otlp.as_int(attrs.get("duration_ms")),
        "" if speed in (None, "normal", "standard") else str(speed),
        error,
    )
    return dataclasses.replace(ev, fp=_fingerprint(ev.model, ev.counts()))


def _metric_row(row: LogRow, obj: dict[str, Any]) -> OtelMetricRow | None:
    head, point = obj.get("metric"), obj.get("point")
    if not isinstance(head, dict) or not isinstance(point, dict) or row.session_id is None:
        return None
    name = otlp.text_or_none(head.get("name"))
    if name is None:
        return None
    attrs = {k: v for k, v in otlp.attrs_of(point.get("attributes")).items() if k not in _PRIVATE}
    return OtelMetricRow(
        row.id,
        row.session_id,
        name,
        otlp.text_or_none(head.get("unit")) or "",
        orjson.dumps(attrs, option=orjson.OPT_SORT_KEYS).decode(),
        otlp.time_of(point.get("startTimeUnixNano")),
        otlp.time_of(point.get("timeUnixNano")),
        otlp.as_int(head.get("aggregationTemporality")),
        otlp.point_value(point),
    )


def _best(state: SessionState, mid: str) -> MsgEv:
    by_rank = state.msgs[mid]
    return by_rank[max(by_rank)]


def _fingerprint(model: str, c: tuple[int, int, int, int, int]) -> tuple[str, int, int, int, int]:
    return (model, c[0], c[1], c[2], c[3] + c[4])


def _msg_ns(ev: MsgEv) -> int | None:
    dt = parse(ev.occurred)
    return int(dt.timestamp() * 1e9) if dt is not None else None


def _fingerprints(state: SessionState) -> dict[str, tuple[tuple[str, int, int, int, int], int | None]]:
    """``state.otel_fp`` for every message of the session (those missing computed now)."""
    fps = state.otel_fp
    if len(fps) != len(state.msgs):
        for mid in state.msgs:
            if mid not in fps:
                ev = _best(state, mid)
                fps[mid] = (_fingerprint(ev.model[1], ev.counts()), _msg_ns(ev))
    return fps


def match(state: SessionState) -> dict[str, tuple[str, str]]:
    """request key -> (message id, matched_by) of every ``api_request`` a transcript message of the
    session explains (the module docstring's three rules, in order; a message explains one event
    at most). A function of ``state`` alone (``state.otel_fp`` and ``otel_order`` are filled in as
    caches of it)."""
    if state.otel_order is None:
        ordered = sorted((e.occurred_ns, k) for k, e in state.otel.items() if e.event == "api_request")
        state.otel_order = [k for _, k in ordered]
    reqs = [(k, state.otel[k]) for k in state.otel_order]
    if not reqs:
        return {}
    out: dict[str, tuple[str, str]] = {}
    claimed: set[str] = set()
    for k, e in reqs:
        mid = state.req_ids.get(e.request_id) if e.request_id else None
        if mid is not None and mid in state.msgs and mid not in claimed:
            out[k] = (mid, "request_id")
            claimed.add(mid)
    by_prompt: dict[str, list[tuple[int, str, OtelEv]]] = {}
    for k, e in reqs:
        if k not in out and e.prompt_id is not None and e.sequence is not None:
            by_prompt.setdefault(e.prompt_id, []).append((e.sequence, k, e))
    for uuid, (pid, seq) in sorted(state.otel_responses.items(), key=lambda x: (x[1], x[0])):
        mid = state.uuids.get(uuid)
        if mid is None or mid in claimed or mid not in state.msgs:
            continue
        model = _best(state, mid).model[1]
        before = [(s, k) for s, k, e in by_prompt.get(pid, ()) if s < seq and k not in out and e.model == model]
        if before:
            k = max(before)[1]
            out[k] = (mid, "message_uuid")
            claimed.add(mid)
    rest = [(k, e) for k, e in reqs if k not in out]
    if not rest:
        return out
    wanted = {e.fp for _, e in rest}
    pool: dict[tuple[str, int, int, int, int], list[tuple[int, str]]] = {}
    for mid, (fp, ns) in _fingerprints(state).items():
        if fp in wanted and ns is not None and mid not in claimed:
            pool.setdefault(fp, []).append((ns, mid))
    for ordered in pool.values():
        ordered.sort()
    for k, e in rest:
        cands = pool.get(e.fp)
        if not cands:
            continue
        best = min(((abs(ns - e.occurred_ns), mid, i) for i, (ns, mid) in enumerate(cands)), default=None)
        if best is None or best[0] > WINDOW_NS:
            continue
        out[k] = (best[1], "tokens")
        cands.pop(best[2])
    return out


def _mismatch(e: OtelEv, ev: MsgEv) -> str | None:
    """Which of the event's figures differ from the message's (None: all agree)."""
    mine, theirs = ev.counts(), e.counts()
    diffs = []
    for name, a, b in (
        ("input", theirs[0], mine[0]),
        ("output", theirs[1], mine[1]),
        ("cache_read", theirs[2], mine[2]),
    ):
        if a != b:
            diffs.append(f"{name} {a} != {b}")
    if theirs[3] + theirs[4] != mine[3] + mine[4]:
        diffs.append(f"cache_write {theirs[3] + theirs[4]} != {mine[3] + mine[4]}")
    elif e.split_known and (theirs[3], theirs[4]) != (mine[3], mine[4]):
        diffs.append(f"cache_write 5m/1h {theirs[3]}/{theirs[4]} != {mine[3]}/{mine[4]}")
    if e.model and e.model != ev.model[1]:
        diffs.append(f"model {e.model} != {ev.model[1]}")
    return "; ".join(diffs) or None


def _may_move(state: SessionState, msgs: set[str]) -> bool:
    """Whether a fold that touched ``msgs`` (and no event) can change ``match``'s answer: one of them
    is claimed, has figures an unmatched request looks for, or is named by a request id or an
    assistant_response. Any other message is in no rule's reach."""
    wanted = state.otel_wanted or set()
    for mid in msgs:
        if mid in state.otel_claimed:
            return True
        ev = _best(state, mid)
        if _fingerprint(ev.model[1], ev.counts()) in wanted:
            return True
    named = {state.req_ids.get(e.request_id) for e in state.otel.values() if e.request_id}
    named.update(state.uuids.get(u) for u in state.otel_responses)
    return not named.isdisjoint(msgs)


def match_compactions(state: SessionState) -> dict[str, str]:
    """event key -> the transcript boundary (its uuid) that explains each compaction event of the
    session: the same trigger and tokens before (where both sides give them), the nearest in time
    within ``COMPACTION_WINDOW_NS``, each boundary explaining one event at most, events taken in
    (time, key) order. A function of ``state`` alone."""
    bounds: list[tuple[int, str, str | None, int | None]] = []
    for bid, c in state.compactions.items():
        dt = parse(c.ts)
        if dt is not None:
            bounds.append((int(dt.timestamp() * 1e9), bid, c.trigger, c.pre_tokens))
    out: dict[str, str] = {}
    claimed: set[str] = set()
    for key, e in sorted(state.otel_compactions.items(), key=lambda kv: (kv[1].occurred_ns, kv[0])):
        cands = [
            (abs(ns - e.occurred_ns), bid)
            for ns, bid, trig, pre in bounds
            if bid not in claimed
            and (trig is None or e.trigger is None or trig == e.trigger)
            and (pre is None or e.pre_tokens is None or pre == e.pre_tokens)
        ]
        best = min(cands, default=None)
        if best is not None and best[0] <= COMPACTION_WINDOW_NS:
            out[key] = best[1]
            claimed.add(best[1])
    return out


def derive_compactions(
    state: SessionState, t: Touched, rows: list[CompactionRow], retracted: list[tuple[str, str]]
) -> None:
    """Append, when a compaction event or a boundary was folded, the own row of every compaction
    event no boundary explains and the retraction of the own row of every one a boundary does."""
    if not state.otel_compactions or not (t.otel_compactions or t.compactions):
        return
    matched = match_compactions(state)
    sid = state.session_id
    for key in sorted(state.otel_compactions):
        bid = BOUNDARY_PREFIX + key
        if key in matched:
            retracted.append((sid, bid))
            continue
        e = state.otel_compactions[key]
        rows.append(CompactionRow(sid, bid, e.agent, e.occurred, e.trigger, e.pre_tokens, None))


def derive_otel(
    state: SessionState,
    t: Touched,
    requests: list[OtelRequestRow],
    usage: list[TokenUsageRow],
    retracted: list[UsageKey],
) -> None:
    """Append the rows of the events whose reconciliation may have moved: the events ``t`` folded,
    those whose match changed, those matched to a message ``t`` touched. Mutates
    ``state.otel_last`` (what was last derived), ``otel_claimed`` / ``otel_wanted`` (what that
    match left) and ``otel_fp`` (``match``'s cache), nothing else."""
    if not state.otel or not (t.otel or t.msgs):
        return
    for mid in t.msgs:  # their figures may have moved: computed again by ``match``
        state.otel_fp.pop(mid, None)
    if not t.otel and state.otel_wanted is not None and not _may_move(state, t.msgs):
        return
    matched = match(state)
    state.otel_claimed = {m for m, _ in matched.values()}
    state.otel_wanted = {e.fp for k, e in state.otel.items() if e.event == "api_request" and k not in matched}
    sid = state.session_id
    last, none = state.otel_last, (None, None)
    moved = [
        k
        for k in state.otel
        if k in t.otel or last.get(k) != matched.get(k, none) or (k in matched and matched[k][0] in t.msgs)
    ]
    for key in sorted(moved):
        e = state.otel[key]
        cur = matched.get(key)
        now = (cur[0], cur[1]) if cur is not None else none
        state.otel_last[key] = now
        counts = e.counts()
        own = usage_id(sid, key) if e.event == "api_request" and cur is None else None
        agrees = mismatch = None
        if cur is not None:
            mismatch = _mismatch(e, _best(state, cur[0]))
            agrees = 0 if mismatch else 1
            retracted.append(UsageKey(sid, usage_id(sid, key)))
        requests.append(
            OtelRequestRow(
                sid,
                key,
                e.raw_event_id,
                e.event,
                e.occurred,
                e.prompt_id,
                e.request_id,
                e.query_source,
                e.model or None,
                e.agent,
                *counts,
                1 if e.split_known else 0,
                e.cost_usd,
                e.duration_ms,
                cur[0] if cur else None,
                cur[1] if cur else None,
                own,
                agrees,
                mismatch,
                e.error,
            )
        )
        if own is not None:
            usage.append(
                TokenUsageRow(
                    None,
                    sid,
                    e.agent,
                    own,
                    e.model or "unknown",
                    *counts,
                    0,
                    e.occurred,
                    RANK_OTEL,
                    counts[0] + counts[2] + counts[3] + counts[4],
                    e.speed,
                    0,
                    "",  # an api_request event names no inference geo
                )
            )
