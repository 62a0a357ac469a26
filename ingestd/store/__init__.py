"""SQLite access: connection policy, migrations, the writer, read queries.

``__all__`` names the modules other packages may import; the rest are this package's own (tests and
bench may import any).
"""

__all__ = [
    "connection",
    "forks",
    "identity",
    "logrows",
    "migrate",
    "payload",
    "payload_blocks",
    "payload_open",
    "pricing",
    "pruned",
    "rollup",
    "sqlgen",
    "stall",
    "upsert",
    "walcheckpoint",
    "watchdog_pass",
    "writer",
]
