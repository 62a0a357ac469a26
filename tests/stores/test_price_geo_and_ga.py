"""Inference geography and the 4.6 models' long-context premium by date (SPEC §5.1; SQLite 0027,
pg 0013), on both stores.

Anthropic's pricing page: "For Claude Opus 4.6 and newer models, specifying US-only inference via
the inference_geo parameter incurs a 1.1x multiplier on all token pricing categories"; the 4.6
models' 1M-context beta billed prompts over 200K tokens at the long-context rates until 1M context
went GA at standard pricing on 2026-03-13. The record is a real corpus line (``corpus_records``)
with the field changed; the dollars are the list prices written out.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ingestd.report.cost import cost_report
from ingestd.report.window import Window, resolve_zone
from tests.stores.corpus_records import OPUS_46_COST, opus_46_record
from tests.stores.stores import Store
from tests.stores.test_iterations import log

ALL = Window(None, None)
UTC = resolve_zone("UTC", {})


def total(store: Store, *recs: dict[str, Any]) -> dict[str, Any]:
    log(store, list(recs))
    return cost_report(store.reader, by=None, window=ALL, zone=UTC)


def test_us_only_inference_costs_a_tenth_more_in_every_bucket(store: Store) -> None:
    doc = total(store, opus_46_record(inference_geo="us"))
    # 36,876.5 x 1.1 = 40,564.15 -> $0.04056415
    assert Decimal(doc["cost_usd"]) == Decimal(OPUS_46_COST) * Decimal("1.1") == Decimal("0.04056415")
    assert doc["cost_complete"] is True


def test_global_not_available_and_empty_geo_bill_at_the_global_rate(store: Store) -> None:
    for n, geo in enumerate(("global", "not_available", "")):
        rec = opus_46_record(inference_geo=geo)
        rec["message"]["id"] += f"-{n}"
        rec["uuid"] = rec["uuid"][:-1] + str(n)
        log(store, [rec])
    doc = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    assert Decimal(doc["cost_usd"]) == 3 * Decimal(OPUS_46_COST) and doc["cost_complete"] is True


def test_a_geo_the_price_row_does_not_price_is_unpriced_never_global(store: Store) -> None:
    doc = total(store, opus_46_record(inference_geo="eu"))
    assert Decimal(doc["cost_usd"]) == 0
    assert doc["cost_complete"] is False
    assert doc["unpriced"]["claude-opus-4-6"]["reasons"] == ["geo:eu"]
    assert doc["unpriced"]["claude-opus-4-6"]["tokens"] == 1 + 472 + 34_903 + 762


def test_the_long_context_premium_applies_before_ga_and_not_after(store: Store) -> None:
    # prompt = 200,000 input + 34,903 cache read + 762 1h write = 235,665 > 200,000
    before = opus_46_record(input_tokens=200_000)
    after = opus_46_record(input_tokens=200_000)
    after["message"]["id"] += "-ga"
    after["uuid"] = after["uuid"][:-2] + "ff"
    after["timestamp"] = "2026-03-14T09:00:00.000Z"
    log(store, [before, after])
    doc = cost_report(store.reader, by="day", window=ALL, zone=UTC)
    days = {r["day"]: Decimal(r["cost_usd"]) for r in doc["rows"]}
    # 2026-02-10, tier rates (input 10, output 37.5, read 1, 1h write 20):
    # 200,000*10 + 472*37.5 + 34,903*1 + 762*20 = 2,067,843 -> $2.067843
    assert days["2026-02-10"] == Decimal("2.067843")
    # 2026-03-14, GA: standard rates: 200,000*5 + 472*25 + 34,903*0.5 + 762*10 = 1,036,871.5 -> $1.0368715
    assert days["2026-03-14"] == Decimal("1.0368715")
    assert doc["cost_complete"] is True
