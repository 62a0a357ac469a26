"""Streamed parts' cache writes (SPEC §4.4): the raw fields are joined, and the buckets are split
from the join when counted (``MsgEv.counts``), whatever the parts and their order."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.state import SessionState, split_writes
from ingestd.core.touch import Touched
from ingestd.core.usagefold import merge_usage, usage_buckets

tokens = st.integers(min_value=0, max_value=10**6)
raw = st.tuples(tokens, tokens, tokens)  # (aggregate, 5m, 1h)


def _usage(agg: int, e5: int, e1: int) -> dict[str, Any]:
    u: dict[str, Any] = {"output_tokens": 1, "cache_creation_input_tokens": agg}
    if e5 or e1:
        u["cache_creation"] = {"ephemeral_5m_input_tokens": e5, "ephemeral_1h_input_tokens": e1}
    return u


def _counts(parts: list[tuple[int, int, int]]) -> tuple[int, ...]:
    state, t = SessionState("s"), Touched()
    for p in parts:
        merge_usage(state, "m", 2, {"model": "x", "usage": _usage(*p)}, "2026-01-01T00:00:00.000Z", "s", t)
    return state.msgs["m"][2].counts()


@given(st.lists(raw, min_size=1, max_size=5), st.randoms())
def test_the_writes_are_split_from_the_joined_raw_fields_in_any_order(parts: list[Any], rnd: Any) -> None:
    want = split_writes(*(max(p[i] for p in parts) for i in range(3)))
    assert _counts(parts)[3:] == want
    shuffled = list(parts)
    rnd.shuffle(shuffled)
    assert _counts(shuffled) == _counts(parts)


def test_an_aggregate_only_part_and_a_breakdown_count_what_was_billed() -> None:
    # Regression: 5m 100 + 1h 40 = 140 counted for 100 billed when the split buckets were joined
    assert _counts([(100, 0, 0), (100, 60, 40)])[3:] == (60, 40)
    assert usage_buckets(_usage(100, 0, 0))[3:] == (100, 0)
