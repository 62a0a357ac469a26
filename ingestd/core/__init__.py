"""The functional core: every decision ingestd makes, with no I/O, clock or environment.

Imports only the standard library, orjson, ``ingestd.errors`` and ``ingestd.core``
(a test parses the imports to keep it that way).

``__all__`` names the modules other packages may import; the rest are this package's own (tests and
bench may import any).
"""

__all__ = [
    "activity",
    "billing",
    "blocks",
    "budget",
    "decode",
    "derive",
    "framing",
    "hookkeys",
    "jsonedit",
    "keys",
    "ledger",
    "otlp",
    "oversized",
    "projector",
    "reassemble",
    "records",
    "revision",
    "rows",
    "search",
    "speeds",
    "state",
    "statusline",
    "storable",
    "timefmt",
    "touch",
    "uncounted",
    "validate",
    "watchdog",
]
