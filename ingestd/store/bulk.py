"""The bulk path for large batches of projection rows (issue 14).

``upsert_token_usage`` writes a batch's ``token_usage`` rows with the same upsert as the per-row
path (``ingestd.store.upsert.UPSERT_TOKENS``), but for a batch of ``BULK_MIN_ROWS`` rows or more it
rolls the newly inserted rows up once, grouped, instead of once per row in the trigger (migration
0015): ``rollup_deferred`` marks the ids from which the per-row triggers stand aside, one grouped
``INSERT ... SELECT`` (the scan's grouping, ``ingestd.store.rollup``) adds those rows, and the mark
is removed, all inside the caller's transaction. The rollup ends exactly as the per-row triggers
leave it (proven by the equivalence tests and ``ingestd verify``, which compare it with the scan).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from ingestd.store.rollup import RATE_SQL, ROLLUP_COLUMNS, SLOT_SQL, TIER_SQL

# Below this many rows the per-row triggers are cheaper than the extra statements (a hook, a tail).
BULK_MIN_ROWS = 256

# The mark: the id the batch's first new row will get (ids are max(id) + 1), read in the same statement.
MARK = "INSERT INTO rollup_deferred (one, from_id) SELECT 1, coalesce(max(id), 0) + 1 FROM token_usage"
# Every row inserted since the mark (exactly the batch's new rows), grouped like the scan and
# added to what the rollup holds for older rows.
ROLLUP_SINCE = (
    f"INSERT INTO token_usage_rollup ({ROLLUP_COLUMNS})"
    f" SELECT t.session_id, t.model, t.bucket, {SLOT_SQL}, {RATE_SQL}, {TIER_SQL}, t.speed,"
    " sum(t.tokens), count(*), sum(t.web_search_requests)"
    " FROM token_usage t WHERE t.id >= (SELECT from_id FROM rollup_deferred)"
    " AND t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)"
    " GROUP BY 1, 2, 3, 4, 5, 6, 7"
    " ON CONFLICT (session_id, model, bucket, slot, rate_effective_from, tier, speed)"
    " DO UPDATE SET tokens = tokens + excluded.tokens, row_count = row_count + excluded.row_count,"
    " web_search_requests = web_search_requests + excluded.web_search_requests"
)


def upsert_token_usage(conn: apsw.Connection, upsert_sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Upsert ``rows`` (``derive.Changes.token_usage`` tuples) with ``upsert_sql``; inside a write transaction.

    Args:
        conn: a migrated connection (migration 0015), in the caller's transaction.
        upsert_sql: the per-row upsert (``ingestd.store.upsert.UPSERT_TOKENS``).
        rows: the rows, in order (later rows of a key win as the upsert decides).

    Side effects: ``token_usage`` and ``token_usage_rollup`` as the per-row triggers would leave
    them; ``rollup_deferred`` is empty again on return.

    Raises:
        apsw.Error: as the per-row statements would (the caller's transaction rolls back).
    """
    if len(rows) < BULK_MIN_ROWS:
        conn.executemany(upsert_sql, rows)
        return
    conn.execute(MARK)
    conn.executemany(upsert_sql, rows)
    conn.execute(ROLLUP_SINCE)
    conn.execute("DELETE FROM rollup_deferred")
