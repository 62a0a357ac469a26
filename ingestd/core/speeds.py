"""Multiplier tables of a price row: speed (migration 0011) and inference geo (0027) (SPEC §5.1), pure."""

from __future__ import annotations

from decimal import Decimal

import orjson


def multipliers(text: object) -> dict[str, Decimal]:
    """A stored ``speed_multipliers`` / ``geo_multipliers`` JSON object as ``{name: Decimal}``.

    '' / None / not JSON / not an object: ``{}`` (no multiplier, so such speeds or geos are unpriced);
    an entry whose value is not a non-negative number is left out. Floats convert through their
    ``repr`` (so 0.3 is exactly 0.3).
    """
    if not isinstance(text, str | bytes) or not text:
        return {}
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(doc, dict):
        return {}
    return {
        str(k): Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
        for k, v in doc.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
    }


speed_multipliers = multipliers
