"""The one parser of stored speed multipliers (store.pricing and report.usage both use it)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ingestd.core.speeds import speed_multipliers


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (None, {}),
        ("", {}),
        ("not json", {}),
        ("[6]", {}),
        ('{"fast": 6}', {"fast": Decimal(6)}),
        ('{"fast": 0.3}', {"fast": Decimal("0.3")}),
        ('{"fast": 6, "neg": -1, "text": "2", "flag": true, "none": null}', {"fast": Decimal(6)}),
        (b'{"fast": 2.5}', {"fast": Decimal("2.5")}),
    ],
)
def test_speed_multipliers(text: object, want: dict[str, Decimal]) -> None:
    assert speed_multipliers(text) == want
