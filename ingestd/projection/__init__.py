"""The projections are a function of the log: rebuild, re-projection when the rules changed,
replay, the canonical dumps it compares, and verify.

``__all__`` names the modules other packages may import; the rest are this package's own (tests and
bench may import any).
"""

__all__ = [
    "rebuild",
    "replay",
    "reproject",
    "verify",
]
