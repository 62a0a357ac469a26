"""Message identity is ``message.id`` + ``requestId`` where present (SPEC §4.4, FORMATS.md §2), on
both stores.

Behind a gateway that returns one message id for every call (ccusage #1635), each call still has
its own ``requestId``: six calls are six billed messages. Streamed parts of one response share
both, so they stay one message (per-bucket maximum over the parts). The record is a real corpus
line (``corpus_records``); the expected dollars are the seeded list prices written out.
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

SID = "491e126e-1e71-469c-ade2-fcc8af567c74"
ORIGIN = f"-home-user-projects-spotter/{SID}.jsonl"
ALL = Window(None, None)
UTC = resolve_zone("UTC", {})
_examples = itertools.count()  # the store lives across examples: each takes its own message id


def _call(n: int, mid: str, *, partial: bool = False) -> dict[str, Any]:
    """The corpus record as call ``n`` behind the gateway: the same ``message.id`` ``mid``, its own
    ``requestId``, uuid and time; ``partial``: an earlier streamed part of that response (the output
    placeholder, no cache write yet: FORMATS.md §2)."""
    no_writes = {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}
    rec = (
        opus_46_record(output_tokens=10, cache_creation_input_tokens=0, cache_creation=no_writes)
        if partial
        else opus_46_record()
    )
    rec["message"]["id"] = mid
    rec["requestId"] = f"req_011CY18jHAewmXYczL1WUz{n:02d}"
    rec["uuid"] = f"5a870ee3-92dd-48a0-9e23-{n:06d}{int(partial):06d}"
    rec["timestamp"] = f"2026-02-10T21:{10 + n:02d}:43.858Z"
    return rec


def _log(store: Store, recs: list[dict[str, Any]]) -> None:
    data = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    oh = short_hash(ORIGIN.encode())
    store.log(
        [
            line_row(ln, origin=ORIGIN, origin_hash=oh, gen=0, received_at="2026-03-20T00:00:00.000Z", path_session=SID)
            for ln in Framer(0).feed(data)
        ]
    )


def _usage(store: Store, mid: str) -> list[tuple[Any, ...]]:
    return store.rows(
        "SELECT message_id, input, output, cache_read, cache_write_5m, cache_write_1h, occurred_at FROM token_usage"
        " WHERE message_id = ? OR message_id LIKE ? ORDER BY message_id",
        (mid, f"{mid}/%"),
    )


def test_six_calls_behind_a_gateway_returning_one_id_are_six_messages(store: Store) -> None:
    mid = "msg_gateway_same_for_every_call"
    for n in range(6):  # one at a time: the id is seen with a second requestId at the second call
        _log(store, [_call(n, mid)])
    rows = _usage(store, mid)
    assert [r[0] for r in rows] == [f"{mid}/request/req_011CY18jHAewmXYczL1WUz{n:02d}" for n in range(6)]
    # each call its own numbers (1 input, 472 output, 34,903 read, 762 1h write) and its own time
    assert {r[1:6] for r in rows} == {(1, 472, 34_903, 0, 762)}
    assert [r[6] for r in rows] == [f"2026-02-10T21:{10 + n:02d}:43.858Z" for n in range(6)]
    doc = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    # 6 x (1*5 + 472*25 + 34,903*0.5 + 762*10) / 10**6 = 6 x $0.0368765 = $0.221259
    assert Decimal(doc["cost_usd"]) == 6 * Decimal(OPUS_46_COST) == Decimal("0.221259")
    assert doc["billed_messages"] == 6 and doc["cost_complete"] is True
    assert store.rollup_differences() == []
    assert store.replay_differs() == []


def test_streamed_parts_of_one_response_stay_one_message(store: Store) -> None:
    mid = "msg_0179FgGtJzf3MkRAWS4a4tbE"
    _log(store, [_call(0, mid, partial=True), _call(0, mid)])
    # one id, one requestId: keyed by the id alone, as every record Claude Code writes
    assert _usage(store, mid) == [(mid, 1, 472, 34_903, 0, 762, "2026-02-10T21:10:43.858Z")]
    doc = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    assert Decimal(doc["cost_usd"]) == Decimal(OPUS_46_COST) and doc["billed_messages"] == 1


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.permutations(list(range(8))), st.lists(st.integers(1, 3), min_size=8, max_size=8))
def test_the_messages_are_the_same_in_any_order_and_batching(store: Store, order: list[int], sizes: list[int]) -> None:
    mid = f"msg_gateway_{next(_examples)}"
    # three calls, each with an earlier streamed part, and a second call of one of them's part again
    recs = [_call(n, mid, partial=p) for n in range(3) for p in (True, False)] + [
        _call(1, mid, partial=True),
        _call(2, mid),
    ]
    shuffled = [recs[i] for i in order]
    i = 0
    for size in sizes:
        if i < len(shuffled):
            _log(store, shuffled[i : i + size])
            i += size
    rows = _usage(store, mid)
    assert [r[0] for r in rows] == [f"{mid}/request/req_011CY18jHAewmXYczL1WUz{n:02d}" for n in range(3)]
    assert {r[1:6] for r in rows} == {(1, 472, 34_903, 0, 762)}  # each the maximum over its parts
    assert store.rollup_differences() == []
