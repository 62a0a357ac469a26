"""``ingestd replay``: the projections are a pure function of the log (SPEC §1, §12).

- ``dump``: canonical per-table dumps (streamed digests) and the comparison that names the first
  differing rows.
- ``run``: the snapshot, the two rebuilds (``ingestd.ingest.rebuild.rebuild_projections``) with
  prune receipts honoured, and ``replay(db_path)`` which ties them together.
"""

from ingestd.replay.dump import TABLES, Comparison, Difference, Dump, compare, dump, first_differences
from ingestd.replay.run import Rebuilder, ReplayResult, live_ctx, rebuild_into, replay, total_rows

__all__ = [
    "TABLES",
    "Comparison",
    "Difference",
    "Dump",
    "Rebuilder",
    "ReplayResult",
    "compare",
    "dump",
    "first_differences",
    "live_ctx",
    "rebuild_into",
    "replay",
    "total_rows",
]
