"""Order independence, batching, re-application and incremental == from scratch (SPEC §4, §7)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ingestd.core.project import fold
from ingestd.core.records import LogRow
from ingestd.core.state import SessionState
from ingestd.core.touch import Ctx
from tests.core.projector_support import Model, by_session, tree_rows

ROWS = by_session(tree_rows())
SESSIONS = sorted(ROWS)


def scratch(sid: str) -> Model:
    m = Model()
    m.apply(fold(None, sid, ROWS[sid], Ctx())[1])
    return m


SCRATCH = {sid: scratch(sid).tables for sid in SESSIONS}


def folded(sid: str, rows: list[LogRow], cuts: list[int]) -> tuple[Model, SessionState | None]:
    m = Model()
    state: SessionState | None = None
    prev = 0
    for c in [*sorted({c % (len(rows) + 1) for c in cuts}), len(rows)]:
        state, ch = fold(state, sid, rows[prev:c], Ctx())
        m.apply(ch)
        prev = c
    return m, state


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SESSIONS), st.randoms(use_true_random=False), st.lists(st.integers(0, 200), max_size=8))
def test_any_order_and_batching_gives_identical_rows(sid: str, rnd: object, cuts: list[int]) -> None:
    rows = list(ROWS[sid])
    rnd.shuffle(rows)  # type: ignore[attr-defined]
    m, _ = folded(sid, rows, cuts)
    assert m.tables == SCRATCH[sid]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(SESSIONS), st.lists(st.integers(0, 200), max_size=5))
def test_reapplying_a_batch_changes_nothing(sid: str, cuts: list[int]) -> None:
    rows = ROWS[sid]
    m, state = folded(sid, rows, cuts)
    _, ch = fold(state, sid, rows, Ctx())
    m.apply(ch)
    assert m.tables == SCRATCH[sid]


def test_incremental_equals_scratch_and_touches_only_new_rows() -> None:
    sid = SESSIONS[0]
    rows = ROWS[sid]
    state, _ = fold(None, sid, rows[:-1], Ctx())
    _, ch = fold(state, sid, rows[-1:], Ctx())
    # one appended line re-derives a bounded set of rows, not the whole session
    assert len(ch.token_usage) <= 5 and len(ch.tool_calls) <= 1
    m, _ = folded(sid, rows, [len(rows) - 1])
    assert m.tables == SCRATCH[sid]
