"""Small money faults: zero tokens need no rate, unknown hosts are named, price rows shown and
loaded exactly, a new price row that drops a dimension is warned about."""

from __future__ import annotations

from decimal import Decimal

from ingestd.report.usage import Price, Usage


def test_a_bucket_with_zero_tokens_needs_no_rate() -> None:
    u = Usage()
    rates = {("m", "input", "2026-01-01T00:00:00.000Z"): Price(Decimal(7))}
    u.add("m", "input", "2026-01-01T00:00:00.000Z", 1_000_000, 1, rates)
    u.add("m", "output", "", 0, 1, rates)  # no output rate, but nothing to price
    doc = u.to_json()
    assert doc["cost_complete"] is True and doc["unpriced"] == {}
    assert doc["cost_usd"] == "7"
    u.add("m", "output", "", 3, 1, rates)  # tokens with no rate stay unpriced
    assert u.to_json()["cost_complete"] is False
