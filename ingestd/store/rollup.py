"""The rollup's reference: the same grouping computed by a direct scan (SPEC §5.3).

``token_usage_rollup`` is maintained by triggers; ``scan`` recomputes what it must
hold from ``token_usage`` and the rate rule, for the equivalence tests and
``ingestd verify``. ``rebuild`` replaces the rollup with the scan.
"""

from __future__ import annotations

from ingestd.store.connection import Db

RollupKey = tuple[str, str, str, str, str, int, str]  # session, model, bucket, slot, rate, tier, speed

SLOT_SQL = (
    "substr(t.occurred_at, 1, 14) || printf('%02d', CAST(substr(t.occurred_at, 15, 2) AS INTEGER) / 15 * 15) || 'Z'"
)
RATE_SQL = (
    "COALESCE((SELECT max(p.effective_from) FROM model_pricing p"
    " WHERE p.model = t.model AND p.bucket = t.bucket AND p.effective_from <= t.occurred_at), '')"
)
# 1 when the message's prompt exceeds the long-context threshold of its resolved rate row (SPEC §5.1:
# a prompt of exactly the threshold is standard); 0 without a threshold or a rate row (migration 0011).
# An integer CASE rather than a comparison, so the central store (PostgreSQL, boolean comparisons)
# runs the same text: ingestd.central.pg.PgReadConn.
TIER_SQL = (
    "COALESCE((SELECT CASE WHEN t.prompt_tokens > q.long_context_threshold THEN 1 ELSE 0 END FROM model_pricing q"
    f" WHERE q.model = t.model AND q.bucket = t.bucket AND q.effective_from = {RATE_SQL}), 0)"
)


def scan_sql(slot: str = SLOT_SQL, rate: str = RATE_SQL, tier: str = TIER_SQL, *, keys: tuple[str, ...] = ()) -> str:
    """The grouped scan of ``token_usage`` the rollup must equal, in ``ROLLUP_COLUMNS`` order.

    Args:
        slot, rate, tier: the dialect's expressions of a row's quarter-hour slot, resolved rate date
            and tier (SQLite: the defaults; the central store: its ``ingestd_slot`` / ``ingestd_rate``
            / ``ingestd_tier`` functions, ``ingestd.central.check``).
        keys: grouping columns before the rollup's own (the central store's ``t.host_id``).
    """
    lead = "".join(f"{k}, " for k in keys)
    groups = ", ".join(str(i) for i in range(1, len(keys) + 8))
    return (
        f"SELECT {lead}t.session_id, t.model, t.bucket, {slot}, {rate}, {tier}, t.speed,"
        " sum(t.tokens), count(*), sum(t.web_search_requests)"
        f" FROM token_usage t GROUP BY {groups}"
    )


SCAN_SQL = scan_sql()
ROLLUP_COLUMNS = (
    "session_id, model, bucket, slot, rate_effective_from, tier, speed, tokens, row_count, web_search_requests"
)


def scan(conn: Db) -> dict[RollupKey, tuple[int, int, int]]:
    """The rollup as a grouped scan of token_usage: key → (tokens, row_count, web_search_requests). Read-only."""
    return {(r[0], r[1], r[2], r[3], r[4], r[5], r[6]): (r[7], r[8], r[9]) for r in conn.execute(SCAN_SQL)}


def stored(conn: Db) -> dict[RollupKey, tuple[int, int, int]]:
    """The rollup table as it is: key → (tokens, row_count, web_search_requests). Read-only."""
    return {
        (r[0], r[1], r[2], r[3], r[4], r[5], r[6]): (r[7], r[8], r[9])
        for r in conn.execute(f"SELECT {ROLLUP_COLUMNS} FROM token_usage_rollup")
    }


def differences(conn: Db, limit: int = 20) -> list[str]:
    """Human-readable differences between the rollup and the scan (empty when equal). Read-only."""
    want, have = scan(conn), stored(conn)
    out = []
    for key in sorted(set(want) | set(have)):
        if want.get(key) != have.get(key):
            out.append(f"rollup {key}: stored {have.get(key)}, scan {want.get(key)}")
            if len(out) >= limit:
                break
    return out


def rebuild(conn: Db) -> None:
    """Replace the rollup with the scan. Call inside a write transaction."""
    conn.execute("DELETE FROM token_usage_rollup")
    conn.execute(f"INSERT INTO token_usage_rollup ({ROLLUP_COLUMNS}) " + SCAN_SQL)
