"""Retention: prune the prunable projections, back up the database, and schedule both (SPEC §8).

- ``export``: ``export(conn, dest, origins)``, transcripts written back from the log.
- ``prune``: ``prune(conn, policy, now=...)``, receipts, ``apply_receipts`` for replay.
- ``backup``: ``backup(db_path, now=...)``, backup retention.
- ``schedule``: ``due(last_run_at, now, interval_s)`` and ``run_scheduled(db_path, settings, now)``
  for the daemon.

``__all__`` names the modules other packages may import; the rest are this package's own (tests and
bench may import any).
"""

__all__ = [
    "backup",
    "export",
    "prune",
    "schedule",
]
