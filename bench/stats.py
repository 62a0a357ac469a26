"""Pure helpers: summaries of repeated measurements, percentiles, unit formatting.

No I/O, no clock: the harness passes the samples in. Tested in ``tests/bench``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Summary:
    """Median and range of repeated samples.

    Attributes:
        median: float, the median of the samples (same unit as the samples).
        low: float, the smallest sample.
        high: float, the largest sample.
        runs: int, how many samples.
    """

    median: float
    low: float
    high: float
    runs: int


def summarize(samples: Sequence[float]) -> Summary:
    """Median and range of ``samples``.

    Raises:
        ValueError: no samples.
    """
    if not samples:
        raise ValueError("no samples to summarize")
    return Summary(float(statistics.median(samples)), float(min(samples)), float(max(samples)), len(samples))


def percentile(samples: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0..100) by the nearest-rank method (a value that was observed).

    Raises:
        ValueError: no samples, or ``p`` outside 0..100.
    """
    if not samples:
        raise ValueError("no samples for a percentile")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} outside 0..100")
    ordered = sorted(samples)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return float(ordered[rank - 1])


def fmt_num(value: float, digits: int = 3) -> str:
    """A number with ``digits`` significant digits, without scientific notation for everyday sizes."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def fmt_summary(s: Summary, unit: str, scale: float = 1.0, digits: int = 3) -> str:
    """``median unit (low–high, n runs)``; a single run prints just the value."""
    med = fmt_num(s.median * scale, digits)
    if s.runs == 1:
        return f"{med} {unit} (1 run)"
    return f"{med} {unit} ({fmt_num(s.low * scale, digits)}–{fmt_num(s.high * scale, digits)}, {s.runs} runs)"


def verdict(value: float, target: float, *, lower_is_better: bool = True) -> str:
    """``meets`` or ``misses`` for a figure against its target (the target itself meets)."""
    ok = value <= target if lower_is_better else value >= target
    return "meets" if ok else "misses"
