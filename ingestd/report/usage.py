"""Token and cost accumulation shared by every report (SPEC §5).

A ``Usage`` adds up grouped token rows, each carrying its resolved rate key
(``rate_effective_from``, ``''`` when unpriced), and prices them exactly with
``Decimal``: ``tokens * usd_per_mtok / 10**6``. Unpriced usage is kept per model and
bucket beside the priced total, never folded into it as $0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import apsw

from ingestd.store.pricing import BUCKETS, rate_decimal

UNPRICED = ""  # the rollup's sentinel rate key (migrations/0002)

RateTable = dict[tuple[str, str, str], Decimal]


def load_rates(conn: apsw.Connection) -> RateTable:
    """Every price row as ``(model, bucket, effective_from) -> USD per MTok``. Read-only."""
    return {
        (r[0], r[1], r[2]): rate_decimal(r[3])
        for r in conn.execute("SELECT model, bucket, effective_from, usd_per_mtok FROM model_pricing")
    }


def money(value: Decimal) -> str:
    """Exact decimal string without exponent or trailing zeros (``"0"``, ``"1.2345"``)."""
    if value == 0:
        return "0"
    text = format(value.normalize(), "f")
    return text


@dataclass(slots=True)
class Usage:
    """Tokens per bucket, priced cost and unpriced usage of one group.

    Attributes:
        totals: tokens per bucket (all five buckets, priced or not).
        cost_usd: Decimal, US dollars of the priced part.
        billed_messages: messages (the ``output`` bucket's row count: five rows per message).
        unpriced: model -> bucket -> [tokens, rows] for usage with no effective rate.
    """

    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0))
    cost_usd: Decimal = field(default_factory=Decimal)
    billed_messages: int = 0
    unpriced: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def add(self, model: str, bucket: str, rate_key: str, tokens: int, rows: int, rates: RateTable) -> None:
        """Add one grouped row (tokens and row count of ``model``/``bucket`` at ``rate_key``).

        A rate key with no matching price row (only possible if a price row vanished without the
        rollup following) counts as unpriced, never as $0.
        """
        self.totals[bucket] = self.totals.get(bucket, 0) + tokens
        if bucket == "output":
            self.billed_messages += rows
        rate = rates.get((model, bucket, rate_key)) if rate_key != UNPRICED else None
        if rate is None:
            slot = self.unpriced.setdefault(model, {}).setdefault(bucket, [0, 0])
            slot[0] += tokens
            slot[1] += rows
        else:
            self.cost_usd += (rate * tokens).scaleb(-6)

    def merge(self, other: Usage) -> None:
        """Add ``other`` into this one."""
        for b, n in other.totals.items():
            self.totals[b] = self.totals.get(b, 0) + n
        self.cost_usd += other.cost_usd
        self.billed_messages += other.billed_messages
        for model, buckets in other.unpriced.items():
            mine = self.unpriced.setdefault(model, {})
            for b, (t, r) in buckets.items():
                slot = mine.setdefault(b, [0, 0])
                slot[0] += t
                slot[1] += r

    @property
    def tokens(self) -> int:
        """All tokens, every bucket."""
        return sum(self.totals.values())

    def unpriced_json(self) -> dict[str, dict[str, int]]:
        """``{model: {"tokens", "messages"}}``; messages = the largest unpriced bucket row count."""
        return {
            model: {
                "tokens": sum(t for t, _ in buckets.values()),
                "messages": max((r for _, r in buckets.values()), default=0),
            }
            for model, buckets in sorted(self.unpriced.items())
        }

    def to_json(self) -> dict[str, Any]:
        """The SPEC §9 cost keys: totals, tokens, cost_usd (exact string), unpriced, billed_messages."""
        return {
            "totals": {b: self.totals.get(b, 0) for b in BUCKETS},
            "tokens": self.tokens,
            "cost_usd": money(self.cost_usd),
            "cost_complete": not self.unpriced,
            "unpriced": self.unpriced_json(),
            "billed_messages": self.billed_messages,
        }
