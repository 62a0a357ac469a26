"""Team mode: many machines ship their logs to one PostgreSQL store of record (SPEC §13).

``pg`` (connections, URL rules, error mapping, the read adapter the reports use),
``migrate`` (the central ledger), ``ship`` (local ``events_raw`` -> central log, COPY and a
per-host high-water mark), ``project`` (the same pure projector folding the central log),
``check`` (verify and replay of the central store).

``__all__`` names the modules other packages may import; the rest are this package's own (tests and
bench may import any).
"""

__all__ = [
    "check",
    "hostid",
    "migrate",
    "pg",
    "pricing",
    "project",
    "ship",
]
