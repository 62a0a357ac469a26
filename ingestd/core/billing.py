"""What a bill is made of, and the one rule that prices it or says why it cannot (SPEC §5.1, §5.2). Pure.

Every usage field that can change what Anthropic bills for a message (FORMATS.md §3), and where
ingestd reads it:

========================================  ===================================================
``message.model``                         the price rows' model (exact id); none: ``no_rate``
``usage.input_tokens`` ...                the five buckets (``usagefold.usage_buckets``)
``cache_creation.ephemeral_5m/1h``        the two cache-write buckets
prompt size (input + read + both writes)  the long-context tier of a row with a threshold
``usage.speed``                           a row's speed multipliers (``STANDARD_SPEEDS``: 1)
``usage.inference_geo``                   a row's geo multipliers (``STANDARD_GEOS``: 1)
``usage.server_tool_use.web_search_...``  the output row's per-search fee
``usage.server_tool_use.web_fetch_...``   no fee (Anthropic's pricing page)
``usage.service_tier``                    ``STANDARD_TIERS`` only (no other tier is priced)
``usage.iterations[].type``               ``message`` never added; ``advisor_message`` a message
                                          of its own model (``usagefold.iterations``)
========================================  ===================================================

Two functions apply the list. ``unknown_fields`` runs when a record is folded: a field or value
outside it that could carry a charge (a new cache-write TTL, a new server tool, another service
tier, a new top-level counter) is named, the record quarantined ``tokens`` and the cost answer
incomplete (``report.usage.uncounted_usage``). ``price`` runs when a report prices a group of
messages that share every pricing fact: each bucket at its row's rate (the tier rate when the
prompt is over the row's threshold), times the speed's and the geo's multipliers, plus the
searches times the fee; any of those the row does not have leaves that part unpriced with its
reason (``no_rate``, ``long_context``, ``speed:<s>``, ``geo:<g>``, ``web_search``), never the
standard rate, never $0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

STANDARD_SPEEDS = frozenset(("", "standard"))  # usage.speed absent or named standard: multiplier 1
# usage.inference_geo absent, empty, "global" or "not_available" (all seen in the corpus): 1.0
STANDARD_GEOS = frozenset(("", "global", "not_available"))
STANDARD_TIERS = frozenset(("standard",))  # usage.service_tier (null on synthetic turns: absent)

# The usage keys the list above names; any other key carrying a count is a charge ingestd cannot price.
KNOWN_USAGE = frozenset(
    (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "cache_creation",
        "server_tool_use",
        "service_tier",
        "inference_geo",
        "iterations",
        "speed",
    )
)
KNOWN_CACHE_CREATION = frozenset(("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"))
KNOWN_SERVER_TOOLS = frozenset(("web_search_requests", "web_fetch_requests"))


@dataclass(frozen=True, slots=True)
class Rate:
    """One bucket's price row as the rule reads it.

    Attributes:
        usd_per_mtok: Decimal, the standard rate.
        long_context_usd_per_mtok: Decimal | None, the rate of a prompt over the row's threshold;
            None: the row has no tier.
        speed_multipliers: speed -> Decimal (standard speeds need none).
        geo_multipliers: inference geo -> Decimal (standard geos need none).
        web_search_usd_per_request: Decimal | None, the fee per search (on ``output`` rows).
    """

    usd_per_mtok: Decimal
    long_context_usd_per_mtok: Decimal | None = None
    speed_multipliers: Mapping[str, Decimal] = field(default_factory=dict)
    web_search_usd_per_request: Decimal | None = None
    geo_multipliers: Mapping[str, Decimal] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Bill:
    """What ``price`` decided for one group of messages.

    Attributes:
        cost_usd: Decimal, the priced part.
        unpriced: bucket -> reason, for each bucket holding tokens no rate could price.
        unpriced_searches: int, web search requests with no fee; ``search_reason`` why.
    """

    cost_usd: Decimal
    unpriced: dict[str, str]
    unpriced_searches: int = 0
    search_reason: str | None = None


def geo_of(value: Any) -> str:
    """The stored ``inference_geo`` of a usage value: '' for the values that bill at 1.0
    (``STANDARD_GEOS``, absent, null), a string as written, anything else as its JSON text (so it
    is priced by no row: never as global)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return "" if value in STANDARD_GEOS else value
    try:
        return orjson.dumps(value).decode()[:80]
    except TypeError:
        return repr(value)[:80]


def bucket_rate(rate: Rate | None, *, tier: bool, speed: str, geo: str) -> tuple[Decimal | None, str | None]:
    """USD per MTok for one bucket of messages with these facts, or None and why.

    The tier rate when ``tier`` (the prompt is over the row's threshold), else the standard rate,
    times the speed's and the geo's multipliers. No row, no tier rate, no multiplier for a
    non-standard speed or geo: None with ``no_rate`` / ``long_context`` / ``speed:<s>`` / ``geo:<g>``.
    """
    if rate is None:
        return None, "no_rate"
    usd = rate.long_context_usd_per_mtok if tier else rate.usd_per_mtok
    if usd is None:
        return None, "long_context"
    if speed not in STANDARD_SPEEDS:
        mult = rate.speed_multipliers.get(speed)
        if mult is None:
            return None, f"speed:{speed}"
        usd *= mult
    if geo not in STANDARD_GEOS:
        mult = rate.geo_multipliers.get(geo)
        if mult is None:
            return None, f"geo:{geo}"
        usd *= mult
    return usd, None


def price(
    rates: Mapping[str, Rate | None],
    tokens: Mapping[str, int],
    tiers: Mapping[str, bool],
    *,
    speed: str,
    geo: str,
    searches: int,
) -> Bill:
    """The one rule: a group of messages sharing every pricing fact, priced or unpriced with why.

    Args:
        rates: bucket -> its resolved price row (None when the model has none for that bucket).
        tokens: bucket -> tokens of the group.
        tiers: bucket -> whether the prompt is over that bucket's row's long-context threshold.
        speed, geo: the group's ``usage.speed`` and stored ``inference_geo``.
        searches: the group's web search requests (priced at the ``output`` row's fee).

    Returns:
        The cost of what could be priced, and each unpriced bucket with its reason; zero tokens need
        no rate (they cost nothing at any rate).
    """
    cost = Decimal(0)
    unpriced: dict[str, str] = {}
    for bucket, n in tokens.items():
        usd, why = bucket_rate(rates.get(bucket), tier=tiers.get(bucket, False), speed=speed, geo=geo)
        if usd is None:
            if n:
                unpriced[bucket] = why or "no_rate"
        else:
            cost += (usd * n).scaleb(-6)
    if not searches:
        return Bill(cost, unpriced)
    out = rates.get("output")
    fee = out.web_search_usd_per_request if out is not None else None
    if fee is None:
        return Bill(cost, unpriced, searches, "web_search")
    return Bill(cost + fee * searches, unpriced)


def unknown_fields(usage: dict[str, Any]) -> list[str]:
    """What ``usage`` carries that the list in this module's docstring does not price, as texts.

    A key outside ``KNOWN_USAGE`` holding a non-zero number (or an object holding one), a
    ``cache_creation`` or ``server_tool_use`` key outside the known ones with a non-zero count, a
    ``service_tier`` other than the standard one: each could change the bill in a way no price row
    says, so the answer that counts this record is incomplete. Zeros, nulls and text under unknown
    keys cost nothing and are not named.
    """
    out: list[str] = []
    for key, value in usage.items():
        if key not in KNOWN_USAGE and _charges(value):
            out.append(f"usage.{key} = {_short(value)} is a usage field ingestd does not price")
    for key, known in (("cache_creation", KNOWN_CACHE_CREATION), ("server_tool_use", KNOWN_SERVER_TOOLS)):
        sub = usage.get(key)
        if isinstance(sub, dict):
            out.extend(
                f"usage.{key}.{k} = {_short(v)} is a usage field ingestd does not price"
                for k, v in sub.items()
                if k not in known and _charges(v)
            )
    tier = usage.get("service_tier")
    if tier is not None and tier not in STANDARD_TIERS:
        out.append(f"usage.service_tier = {_short(tier)} is not a tier ingestd prices (counted at the standard rate)")
    return out


def _charges(value: Any) -> bool:
    """Whether a value could be a charge: a non-zero number, or a container holding one."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, dict):
        return any(_charges(v) for v in value.values())
    if isinstance(value, list):
        return any(_charges(v) for v in value)
    return False


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"
