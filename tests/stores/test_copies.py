"""Copies of one message across files (SPEC §4.4): the claim rule picks the session that owns it,
the numbers are the per-bucket maximum over every copy wherever it is, in any order and placement.

Streamed parts before Claude Code 2.1.97 carry an output placeholder (FORMATS.md §2); a resumed
session copies history into a new file. A partial copy in one file must never beat the final one
in another (ccusage keeps the larger). The record is a real corpus line (``corpus_records``).
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.core.framing import Framer
from ingestd.core.keys import short_hash
from ingestd.core.records import line_row
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, resolve_zone
from tests.stores.corpus_records import OPUS_46_COST, opus_46_record
from tests.stores.stores import Store

_examples = itertools.count()  # the store lives across examples: each takes its own message id
ALL = Window(None, None)
UTC = resolve_zone("UTC", {})
SESSIONS = ("491e126e-1e71-469c-ade2-fcc8af567c74", "7a0c1d2e-0000-4000-8000-000000000002")
# where a copy can sit: a session's own file, or a subagent file of that session
PLACES = [(s, f"-home-user-projects-spotter/{s}.jsonl") for s in SESSIONS] + [
    (s, f"-home-user-projects-spotter/{s}/subagents/agent-a1b2c3d.jsonl") for s in SESSIONS
]


def _copies() -> list[dict[str, Any]]:
    final = opus_46_record()
    # an earlier streamed part of the same response: the output placeholder, no cache write yet
    no_writes = {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}
    partial = opus_46_record(output_tokens=10, cache_creation_input_tokens=0, cache_creation=no_writes)
    partial["uuid"] = "5a870ee3-92dd-48a0-9e23-b50e820810a0"
    return [partial, final]


def _write(store: Store, rec: dict[str, Any], place: int, n: int, example: int = 0) -> None:
    sid, origin = PLACES[place]
    msg = {**rec["message"], "id": f"{rec['message']['id']}-{example}"}
    rec = {**rec, "message": msg, "sessionId": sid, "uuid": f"{rec['uuid'][:-6]}{example:03d}{n:03d}"}
    if "/subagents/" in origin:
        rec = {**rec, "isSidechain": True, "agentId": "a1b2c3d"}
    oh = short_hash(origin.encode())
    store.log(
        [
            line_row(ln, origin=origin, origin_hash=oh, gen=0, received_at="2026-03-20T00:00:00.000Z", path_session=sid)
            for ln in Framer(0).feed(orjson.dumps(rec) + b"\n")
        ]
    )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, len(PLACES) - 1)), min_size=2, max_size=4).filter(
        lambda xs: {c for c, _ in xs} == {0, 1}
    )
)
def test_the_numbers_are_the_maximum_over_every_copy_in_any_order_and_place(
    store: Store, copies: list[tuple[int, int]]
) -> None:
    example = next(_examples)
    recs = _copies()
    for n, (which, place) in enumerate(copies):
        _write(store, recs[which], place, n, example)
    rows = store.rows(
        "SELECT input, output, cache_read, cache_write_5m, cache_write_1h, prompt_tokens FROM token_usage"
        " WHERE message_id = ?",
        (f"msg_0179FgGtJzf3MkRAWS4a4tbE-{example}",),
    )
    # the final copy's numbers (1 input, 472 output, 34,903 read, 762 1h write) whoever owns it
    assert rows == [(1, 472, 34_903, 0, 762, 1 + 34_903 + 762)]
    assert store.rollup_differences() == []
    doc = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    messages = len(store.rows("SELECT message_id FROM token_usage"))  # one per example run on this store
    assert Decimal(doc["cost_usd"]) == messages * Decimal(OPUS_46_COST)


def test_usage_on_a_record_of_no_type_makes_the_answer_incomplete(store: Store) -> None:
    rec = {k: v for k, v in opus_46_record().items() if k != "type"}
    _write(store, rec, 0, 0)
    doc = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    assert doc["cost_complete"] is False and doc["uncounted"]["records"] == 1
    assert doc["uncounted"]["reasons"] == [
        "usage on a record of no type: not counted (only assistant records are billed)"
    ]
