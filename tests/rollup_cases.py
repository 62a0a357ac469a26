"""The values both rollup equivalence suites draw from (SPEC §5.3): SQLite's
(``tests/store/test_rollup.py``) and PostgreSQL's (``tests/central/test_pg_schema.py``), so the two
stores are tried on the same models, buckets and instants (quarter-hour edges, an offset spelling)."""

from __future__ import annotations

MODELS = ["claude-opus-4-6", "claude-sonnet-4-5-20250929", "model-without-price"]
BUCKETS = ["input", "output", "cache_read", "cache_write_5m", "cache_write_1h"]
TIMES = [
    "2025-03-01T10:00:00.000Z",
    "2025-03-01T10:14:59.999Z",
    "2025-03-01T10:15:00.000Z",
    "2025-06-01T00:00:00.000Z",
    "2025-06-01T02:00:00+02:00",
    "2025-09-30T23:59:59.999Z",
]
PRICE_TIMES = ["2025-03-01T10:15:00.000Z", "2025-06-01", "2026-01-01T00:00:00Z"]
