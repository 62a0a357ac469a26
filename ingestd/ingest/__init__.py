"""Transcript discovery, tail reading, backfill and rebuilding projections from the log.

``__all__`` names the modules other packages may import; the rest are this package's own (tests and
bench may import any).
"""

__all__ = [
    "backfill",
    "readfile",
    "scan",
    "summary",
]
