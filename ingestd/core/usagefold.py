"""A message's usage folded into the session state (SPEC §4.4, §5.1), pure."""

from __future__ import annotations

from typing import Any

from ingestd.core.rows import QuarantineRow
from ingestd.core.state import LEGACY_PREFIX, MsgEv, SessionState, split_writes
from ingestd.core.touch import Touched
from ingestd.core.validate import INFER, MAX_TOKENS, TOKENS, name_refused, usage_problems

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
    the aggregate was once reported 0 while the breakdown was not). ``iterations[]`` repeats
    the same numbers and is never added.
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
    quarantines the record (``validate.TOKENS``).
    """
    usage = msg.get("usage")
    if not isinstance(usage, dict):
        return
    row = t.row
    probs = usage_problems(usage)
    if probs and row is not None:
        detail = "; ".join(probs) + " is not a token count: counted as 0"
        t.quarantined.append(
            QuarantineRow(row.id, TOKENS, state.session_id, row.origin, row.origin_offset, detail[:400])
        )
    if ts == INFER and t.bad_at is not None:
        og, off, received_at = t.bad_at
        state.inferred.setdefault(mid, {})[(og, off)] = received_at
        name_refused(state, og, off, mid)
    inp, out, cread = _plain(usage)
    model = msg.get("model")
    model = model if isinstance(model, str) and model else "unknown"
    # price dimensions (SPEC §5.1): `speed` ("fast": Opus 4.6 fast mode), and the web search server
    # tool's request count, which streamed parts repeat: the maximum over parts, once per message
    sp = usage.get("speed")
    stu = usage.get("server_tool_use")
    searches = count(stu.get("web_search_requests")) if isinstance(stu, dict) else 0
    part = MsgEv(
        inp, out, cread, (out, model), ts, agent, sp if isinstance(sp, str) else "", searches, *raw_writes(usage)
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
