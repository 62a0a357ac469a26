"""A message's usage folded into the session state (SPEC §4.4, §5.1), pure."""

from __future__ import annotations

from typing import Any

from ingestd.core.billing import geo_of, unknown_fields
from ingestd.core.rows import QuarantineRow
from ingestd.core.state import LEGACY_PREFIX, MsgEv, SessionState, split_writes
from ingestd.core.touch import Touched
from ingestd.core.uncounted import USAGE_NOT_COUNTED
from ingestd.core.validate import (
    INFER,
    MAX_TOKENS,
    TIMESTAMP,
    TOKENS,
    name_refused,
    shorten,
    usage_problems,
)

# A counter beyond MAX_TOKENS (1e30, 400 digits) cannot be bound at all and once aborted the
# whole batch; like any other counter that is not a count (a string, negative, null) it counts
# 0, and a record holding one is quarantined (``validate.usage_problems``).


def count(v: Any) -> int:
    """``v`` when it is a token count the store can bind (an int in 1..MAX_TOKENS), else 0."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_TOKENS else 0


def usage_buckets(usage: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """(input, output, cache_read, cache_write_5m, cache_write_1h) of one usage object.

    The 5-minute bucket takes ``ephemeral_5m`` plus whatever of the aggregate
    ``cache_creation_input_tokens`` the breakdown does not explain (5 min is the API's
    default TTL; 1.0.48 / 1.0.65 records have no breakdown at all, e.g.
    ``corpus/claude-projects/-Users-user-projects-agents-v3/c44afee0-….jsonl``). The billed
    write total is the larger of the aggregate and the breakdown (FORMATS.md §3, CL 2.1.152:
    the aggregate was once reported 0 while the breakdown was not). ``iterations[]`` is never
    added to it: its billed entries are messages of their own (``iterations``).
    """
    return (*_plain(usage), *split_writes(*raw_writes(usage)))


def _plain(usage: dict[str, Any]) -> tuple[int, int, int]:
    """(input, output, cache_read) of one usage object, tokens."""
    return (
        count(usage.get("input_tokens")),
        count(usage.get("output_tokens")),
        count(usage.get("cache_read_input_tokens")),
    )


def raw_writes(usage: dict[str, Any]) -> tuple[int, int, int]:
    """(``cache_creation_input_tokens``, ``ephemeral_5m``, ``ephemeral_1h``) of one usage object, tokens."""
    cc = usage.get("cache_creation")
    e5 = e1 = 0
    if isinstance(cc, dict):
        e5 = count(cc.get("ephemeral_5m_input_tokens"))
        e1 = count(cc.get("ephemeral_1h_input_tokens"))
    return count(usage.get("cache_creation_input_tokens")), e5, e1


def _join(ev: MsgEv, part: MsgEv) -> None:
    """Merge one streamed part into the message's evidence: every field a join."""
    ev.speed = max(ev.speed, part.speed)
    ev.inference_geo = max(ev.inference_geo, part.inference_geo)
    ev.web_search_requests = max(ev.web_search_requests, part.web_search_requests)
    ev.input = max(ev.input, part.input)
    ev.output = max(ev.output, part.output)
    ev.cache_read = max(ev.cache_read, part.cache_read)
    # cache writes: the raw fields joined; split only when counted (``MsgEv.counts``, SPEC §4.4)
    ev.write_agg = max(ev.write_agg, part.write_agg)
    ev.write_5m = max(ev.write_5m, part.write_5m)
    ev.write_1h = max(ev.write_1h, part.write_1h)
    # the model is the one on the part with the largest output (ties: larger id)
    ev.model = max(ev.model, part.model)
    ev.occurred = min(ev.occurred, part.occurred)
    ev.agent = min(ev.agent, part.agent)


def merge_usage(state: SessionState, mid: str, rank: int, msg: dict[str, Any], ts: str, agent: str, t: Touched) -> None:
    """Fold one part of a message (SPEC §4.4): per-bucket maximum over streamed parts.

    ``ts`` is ``validate.INFER`` for a part whose timestamp is refused (``t.bad_at`` says where
    it is): the message's ``occurred_at`` is then inferred at derive time unless another part's
    timestamp is valid (the earliest valid part wins, as always). A counter that is not a count
    quarantines the record (``validate.TOKENS``), and so does usage that is not counted: an
    ``iterations`` entry ingestd cannot bill (``iterations``).
    """
    usage = msg.get("usage")
    if not isinstance(usage, dict):
        return
    row = t.row
    top = usage_problems(usage)
    probs = ["; ".join(top) + " is not a token count: counted as 0"] if top else []
    probs += unknown_fields(usage)
    if ts == INFER and t.bad_at is not None:
        og, off, _ = t.bad_at
        name_refused(state, og, off, mid)
    model = msg.get("model")
    _merge_part(state, mid, rank, usage, model if isinstance(model, str) and model else "unknown", ts, agent, t)
    for key, entry_model, entry in iterations(usage, mid, probs):
        _merge_part(state, key, rank, entry, entry_model, ts, agent, t)
    if t.undated and row is not None:
        # the record's timestamp row says its usage is in no bucket: the answer is incomplete
        t.quarantined[:] = [
            q._replace(detail=q.detail + USAGE_NOT_COUNTED)
            if q.raw_event_id == row.id and q.reason == TIMESTAMP and not q.detail.endswith(USAGE_NOT_COUNTED)
            else q
            for q in t.quarantined
        ]
    if probs and row is not None:
        detail = "; ".join(probs)
        t.quarantined.append(
            QuarantineRow(row.id, TOKENS, state.session_id, row.origin, row.origin_offset, detail[:400])
        )


def request_key(mid: str, request_id: str) -> str:
    """The ``token_usage.message_id`` of the response ``request_id`` under a message id shared by
    several requestIds (a gateway that returns one id for every call)."""
    return f"{mid}/request/{request_id}"


def message_key(state: SessionState, mid: str, request_id: Any) -> str:
    """The key of the message a record of ``message.id`` ``mid`` and ``requestId`` ``request_id``
    belongs to (SPEC §4.4: the id and the requestId where present).

    Streamed parts of one response share both, so they are one message. An id seen with one
    requestId (or none) keys its message by the id alone; once seen with a second, each requestId
    is a message of its own (``request_key``) and parts without one stay under the id. The id
    splits once: the parts folded under it before are folded again under their own keys
    (``needs_refold``; the keys derived before are retracted), so the keys are the same in any
    order.
    """
    req = request_id if isinstance(request_id, str) else ""
    if mid not in state.split_msgs:
        first = state.msg_req.setdefault(mid, req)
        if first == req:
            return mid
        state.split_msgs.add(mid)
        del state.msg_req[mid]
        if first:  # what was folded under the id alone belongs to the first requestId: fold again
            prefix = mid + "/iterations/"
            state.retract_msgs.update(k for k in state.msgs if k == mid or k.startswith(prefix))
            state.needs_refold = True
    return request_key(mid, req) if req else mid


def iteration_key(mid: str, index: int) -> str:
    """The ``token_usage.message_id`` of the billed iteration at ``index`` of message ``mid``'s
    ``usage.iterations``: streamed parts of one response repeat the same list, so the position
    names one advisor call however many parts carry it."""
    return f"{mid}/iterations/{index}"


def iterations(usage: dict[str, Any], mid: str, probs: list[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """The billed entries of ``usage.iterations`` (SPEC §4.4) as ``(message key, model, usage)``.

    ``type: "message"`` entries repeat the top-level numbers (never added); ``type:
    "advisor_message"`` entries are the advisor model's own call, not in the top-level numbers
    (Anthropic's advisor-tool docs: "top-level usage fields reflect executor tokens only"), billed
    at that entry's ``model``. What cannot be billed is appended to ``probs`` (the record is
    quarantined, the cost answer incomplete): ``iterations`` not a list, an entry not an object,
    an entry of another or no type carrying tokens, an advisor entry without a model; a counter
    that is not a count in a billed entry counts 0 like a top-level one.
    """
    its = usage.get("iterations")
    if its is None:
        return []
    if not isinstance(its, list):
        probs.append(f"usage.iterations = {shorten(its)} is not a list: not counted")
        return []
    out: list[tuple[str, str, dict[str, Any]]] = []
    for i, entry in enumerate(its):
        where = f"usage.iterations[{i}]"
        if not isinstance(entry, dict):
            probs.append(f"{where} = {shorten(entry)} is not an object: not counted")
            continue
        kind = entry.get("type")
        if kind == "message":
            continue
        tokens = sum(usage_buckets(entry))
        if kind == "advisor_message":
            model = entry.get("model")
            if isinstance(model, str) and model:
                probs.extend(f"{where}.{p[6:]} is not a token count: counted as 0" for p in usage_problems(entry))
                out.append((iteration_key(mid, i), model, entry))
            elif tokens:
                probs.append(f"{where} (advisor_message) has no model: its {tokens} tokens not counted")
        elif tokens or usage_problems(entry):
            named = f"type {shorten(kind)}" if isinstance(kind, str) else "no type"
            probs.append(f"{where} has {named}: its {tokens} tokens not counted (an iteration ingestd cannot bill)")
    return out


def _merge_part(
    state: SessionState, mid: str, rank: int, usage: dict[str, Any], model: str, ts: str, agent: str, t: Touched
) -> None:
    """Join one usage object of ``model`` into message ``mid``'s evidence at ``rank``."""
    if ts == INFER and t.bad_at is not None:
        og, off, _ = t.bad_at
        # a part whose timestamp is refused or absent is never dated at its read time
        # (``validate.occurred_of``): in a file with no valid timestamp it is undated
        state.inferred.setdefault(mid, {})[(og, off)] = None
    inp, out, cread = _plain(usage)
    # price dimensions (SPEC §5.1): `speed` ("fast": Opus 4.6 fast mode), `inference_geo` ("us":
    # US-only inference, 1.1x from Opus 4.6 on), and the web search server tool's request count,
    # which streamed parts repeat: the maximum over parts, once per message
    sp = usage.get("speed")
    stu = usage.get("server_tool_use")
    searches = count(stu.get("web_search_requests")) if isinstance(stu, dict) else 0
    part = MsgEv(
        inp,
        out,
        cread,
        (out, model),
        ts,
        agent,
        sp if isinstance(sp, str) else "",
        searches,
        *raw_writes(usage),
        geo_of(usage.get("inference_geo")),
    )
    by_rank = state.msgs.setdefault(mid, {})
    ev = by_rank.get(rank)
    if ev is None:
        by_rank[rank] = part
    else:
        _join(ev, part)
    t.msgs.add(mid)
    if agent.startswith(LEGACY_PREFIX):
        state.legacy_msgs.add(mid)
