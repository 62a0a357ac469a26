"""Real sessions, real hooks, any arrival order (SPEC §4: every merged field is a join).

Six sessions of ``../shared/corpus`` have both transcripts (``claude-projects``) and captured hook
deliveries (``hooks/*/*.jsonl``). Each session's log rows, transcript lines and hook bodies alike, are
folded in random orders and random batches; every projection row (sessions, agents, edges, token
usage, tool calls, compactions, events, summaries) must equal the one fold of all rows in file order.
Skipped when the corpus is absent.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core.folding import Incremental
from tests.core.projector_support import Model, by_session, tree_rows

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"real corpus not found at {CORPUS}")


def _hook_rows(start_id: int) -> dict[str, list[LogRow]]:
    """Every captured hook body by session; receipt times one second apart in file order."""
    out: dict[str, list[LogRow]] = {}
    n = 0
    for path in sorted((CORPUS / "hooks").rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                body = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            sid, name = body.get("session_id"), body.get("hook_event_name")
            if not isinstance(sid, str) or not isinstance(name, str):
                continue
            n += 1
            at = f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
            out.setdefault(sid, []).append(LogRow(start_id + n, "hook", name, line, at, sid, "hook"))
    return out


def _rows() -> dict[str, list[LogRow]]:
    if not CORPUS.is_dir():
        return {}
    transcripts = by_session(tree_rows(CORPUS / "claude-projects"))
    hooks = _hook_rows(10**6)
    return {sid: transcripts[sid] + hooks[sid] for sid in sorted(set(transcripts) & set(hooks))}


ROWS = _rows()
SESSIONS = sorted(ROWS)


def _scratch(sid: str) -> dict[str, dict[object, tuple[object, ...]]]:
    m = Model()
    m.apply(fold_log(sid, ROWS[sid], Ctx())[1])
    return m.tables


SCRATCH = {sid: _scratch(sid) for sid in SESSIONS}


def test_the_corpus_has_sessions_with_both_sources() -> None:
    assert len(SESSIONS) >= 6
    assert all(any(r.source == "hook" for r in ROWS[s]) and any(r.source == "jsonl" for r in ROWS[s]) for s in SESSIONS)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(SESSIONS or [""]), st.randoms(use_true_random=False), st.lists(st.integers(0, 3000), max_size=6))
def test_any_arrival_order_of_hooks_and_lines_gives_the_same_rows(sid: str, rnd: object, cuts: list[int]) -> None:
    rows = list(ROWS[sid])
    rnd.shuffle(rows)  # type: ignore[attr-defined]
    m = Model()
    inc = Incremental(sid)
    prev = 0
    for c in [*sorted({c % (len(rows) + 1) for c in cuts}), len(rows)]:
        ch = inc(rows[prev:c])
        m.apply(ch)
        prev = c
    assert m.tables == SCRATCH[sid]
