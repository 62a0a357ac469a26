"""``usage.iterations[]`` by type (SPEC §4.4, FORMATS.md §3), on both stores.

Anthropic's advisor-tool docs: "top-level usage fields reflect executor tokens only"; the advisor
model's tokens are ``iterations[]`` entries of ``type: "advisor_message"`` with their own ``model``,
billed at that model's rates. ``type: "message"`` entries repeat the top-level numbers. The records
are a real corpus line (``corpus_records``) with the entries added; the expected dollars are the
seeded list prices written out (USD per MTok x tokens / 10**6).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from ingestd.core.framing import Framer
from ingestd.core.keys import short_hash
from ingestd.core.records import line_row
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, resolve_zone
from tests.stores.corpus_records import OPUS_46_COST, opus_46_record
from tests.stores.stores import Store

SID = "491e126e-1e71-469c-ade2-fcc8af567c74"
ALL = Window(None, None)
UTC = resolve_zone("UTC", {})
ADVISOR = {
    "type": "advisor_message",
    "model": "claude-opus-4-7",
    "input_tokens": 12_000,
    "output_tokens": 800,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}
# claude-opus-4-7 at input 5, output 25 USD per MTok: 12,000*5 + 800*25 = 80,000 -> $0.08
ADVISOR_COST = Decimal("0.08")
# the executor's own call, repeated as an iteration: never added
EXECUTOR = {
    "type": "message",
    "input_tokens": 1,
    "output_tokens": 472,
    "cache_read_input_tokens": 34_903,
    "cache_creation_input_tokens": 762,
}


def log(store: Store, recs: list[dict[str, Any]], received_at: str = "2026-03-20T00:00:00.000Z") -> None:
    origin = f"-home-user-projects-spotter/{SID}.jsonl"
    data = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    oh = short_hash(origin.encode())
    store.log(
        [
            line_row(ln, origin=origin, origin_hash=oh, gen=0, received_at=received_at, path_session=SID)
            for ln in Framer(0).feed(data)
        ]
    )
    assert store.rollup_differences() == []


def by_model(store: Store) -> dict[str, Any]:
    doc = cost_report(store.reader, by="model", window=ALL, zone=UTC)
    return {**doc, "models": {r["model"]: r for r in doc["rows"]}}


def test_an_advisor_call_is_billed_at_its_own_model(store: Store) -> None:
    log(store, [opus_46_record(iterations=[EXECUTOR, ADVISOR])])
    doc = by_model(store)
    assert Decimal(doc["models"]["claude-opus-4-6"]["cost_usd"]) == Decimal(OPUS_46_COST)
    advisor = doc["models"]["claude-opus-4-7"]
    assert Decimal(advisor["cost_usd"]) == ADVISOR_COST
    assert advisor["totals"]["input"] == 12_000 and advisor["totals"]["output"] == 800
    assert advisor["billed_messages"] == 1
    assert Decimal(doc["cost_usd"]) == Decimal(OPUS_46_COST) + ADVISOR_COST == Decimal("0.1168765")
    assert doc["cost_complete"] is True


def test_streamed_parts_repeating_the_iterations_count_the_advisor_once(store: Store) -> None:
    first = opus_46_record(iterations=[EXECUTOR, ADVISOR])
    second = {**opus_46_record(iterations=[EXECUTOR, ADVISOR]), "uuid": "5a870ee3-92dd-48a0-9e23-b50e820810af"}
    log(store, [first, second])
    doc = by_model(store)
    assert Decimal(doc["models"]["claude-opus-4-7"]["cost_usd"]) == ADVISOR_COST  # not 2 x $0.08
    assert doc["models"]["claude-opus-4-7"]["billed_messages"] == 1


def test_the_advisor_call_belongs_to_the_same_session(store: Store) -> None:
    log(store, [opus_46_record(iterations=[ADVISOR])])
    doc = cost_report(store.reader, by="session", window=ALL, zone=UTC)
    (row,) = doc["rows"]
    assert row["session_id"] == SID
    assert Decimal(row["cost_usd"]) == Decimal(OPUS_46_COST) + ADVISOR_COST


def test_an_iteration_type_ingestd_cannot_bill_makes_the_answer_incomplete(store: Store) -> None:
    other = {**ADVISOR, "type": "compaction_message"}
    log(store, [opus_46_record(iterations=[EXECUTOR, other])])
    doc = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    assert Decimal(doc["cost_usd"]) == Decimal(OPUS_46_COST)  # the executor's call, priced
    assert doc["cost_complete"] is False
    assert doc["uncounted"]["records"] == 1
    (reason,) = doc["uncounted"]["reasons"]
    assert "'compaction_message'" in reason and "12800 tokens" in reason  # 12,000 + 800


def test_bad_iterations_are_quarantined_and_the_rest_counted(store: Store) -> None:
    cases: list[Any] = [
        "not a list",
        [ADVISOR, {k: v for k, v in ADVISOR.items() if k != "type"}],
        [{**ADVISOR, "model": None}],
    ]
    for n, its in enumerate(cases):
        rec = opus_46_record(iterations=its)
        rec["message"]["id"] += f"-{n}"
        rec["uuid"] = f"{rec['uuid'][:-1]}{n}"
        log(store, [rec])
    negative = opus_46_record(iterations=[{**ADVISOR, "input_tokens": -5}])
    negative["message"]["id"] += "-neg"
    negative["uuid"] = negative["uuid"][:-2] + "ff"
    log(store, [negative])
    doc = by_model(store)
    # every executor call counts (4 x the record); the one sound advisor entry, and the one with a
    # negative input (counted 0: 800 * 25 = 20,000 -> $0.02), are billed at claude-opus-4-7
    assert Decimal(doc["models"]["claude-opus-4-6"]["cost_usd"]) == 4 * Decimal(OPUS_46_COST)
    assert Decimal(doc["models"]["claude-opus-4-7"]["cost_usd"]) == ADVISOR_COST + Decimal("0.02")
    assert doc["cost_complete"] is False
    assert doc["uncounted"]["records"] == 4
    reasons = " | ".join(str(r[0]) for r in store.reader.execute("SELECT detail FROM quarantine"))
    assert "is not a list" in reasons
    assert "has no type: its 12800 tokens not counted" in reasons
    assert "(advisor_message) has no model" in reasons
    assert "usage.iterations[0].input_tokens = -5 is not a token count" in reasons


def test_the_terminal_names_what_is_not_counted(store: Store) -> None:
    from rich.console import Console

    from ingestd.report.render import unpriced_note

    log(store, [opus_46_record(iterations=[{**ADVISOR, "type": "compaction_message"}])])
    console = Console(record=True, width=200)
    unpriced_note(console, cost_report(store.reader, by=None, window=ALL, zone=UTC))
    text = console.export_text()
    assert "+? not counted: 1 record with usage no bucket holds" in text
    assert "'compaction_message'" in text
