"""Token totals: the generator's ``ground_truth.json`` against what ingestd stored (pure).

The generator's ``final`` semantics (the last streamed snapshot per ``(message.id, requestId)``, de-duplicated
across files) is what SPEC §4.4 asks for. Its ``cache_creation_input_tokens`` is the sum of ingestd's two
write buckets (``cache_write_5m`` + ``cache_write_1h``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# ground_truth field -> the ingestd buckets that add up to it
FIELD_BUCKETS: dict[str, tuple[str, ...]] = {
    "input_tokens": ("input",),
    "output_tokens": ("output",),
    "cache_read_input_tokens": ("cache_read",),
    "cache_creation_input_tokens": ("cache_write_5m", "cache_write_1h"),
}


@dataclass(frozen=True, slots=True)
class TotalsCheck:
    """One comparison of stored totals with the ground truth.

    Attributes:
        expected: dict[str, int], ground-truth field -> tokens.
        got: dict[str, int], the same fields summed from the stored buckets.
        ok: bool, every field equal.
    """

    expected: dict[str, int]
    got: dict[str, int]
    ok: bool

    def differences(self) -> dict[str, int]:
        """Field -> got minus expected, only where they differ."""
        return {k: self.got[k] - self.expected[k] for k in self.expected if self.got[k] != self.expected[k]}


def expected_totals(ground_truth: Mapping[str, Any]) -> dict[str, int]:
    """The four token totals under the ``final`` semantics."""
    total = ground_truth["final"]["total"]
    return {field: int(total[field]) for field in FIELD_BUCKETS}


def check_totals(ground_truth: Mapping[str, Any], bucket_rows: Iterable[tuple[str, int]]) -> TotalsCheck:
    """Compare ``SELECT bucket, sum(tokens) FROM token_usage GROUP BY bucket`` rows with the ground truth."""
    by_bucket: dict[str, int] = {}
    for bucket, tokens in bucket_rows:
        by_bucket[bucket] = by_bucket.get(bucket, 0) + int(tokens or 0)
    got = {field: sum(by_bucket.get(b, 0) for b in buckets) for field, buckets in FIELD_BUCKETS.items()}
    expected = expected_totals(ground_truth)
    return TotalsCheck(expected=expected, got=got, ok=got == expected)
