"""``token_usage`` read as one row per (message, bucket), for tests that state figures per bucket.

``BY_BUCKET`` is a subquery in both stores' dialect: every column of ``token_usage`` plus ``bucket``
(a ``BUCKETS`` name) and ``tokens`` (that bucket's column).
"""

from __future__ import annotations

BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")

BY_BUCKET = (
    "(" + " UNION ALL ".join(f"SELECT *, '{b}' AS bucket, {b} AS tokens FROM token_usage" for b in BUCKETS) + ") AS u"
)
