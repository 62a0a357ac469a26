"""The functional core: every decision ingestd makes, with no I/O, clock or environment.

Imports only the standard library, orjson, ``ingestd.errors`` and ``ingestd.core``
(a test parses the imports to keep it that way).
"""
