"""The rollup's reference: the same grouping computed by a direct scan (SPEC §5.3).

``token_usage_rollup`` is maintained by triggers (migrations 0024, 0027); ``scan`` recomputes what it
must hold from ``token_usage`` and the rate rule, for the equivalence tests and ``ingestd
verify``. ``rebuild`` replaces the rollup with the scan.

Its key is ``(session_id, model, slot, rate_effective_from, tier, speed, inference_geo)``, its values the five
bucket sums, the message count and the web search requests. ``rate_effective_from`` is the
message's price version: the latest ``effective_from`` of any of its model's price rows at or
before ``occurred_at`` ('' when the model has none); a bucket's rate is that bucket's latest row
at or before the version (``ingestd.report.usage.bucket_rate``). ``tier`` has one bit per bucket
(``TIER_BITS``): set when the prompt exceeds the long-context threshold of that bucket's rate row.
"""

from __future__ import annotations

from ingestd.store.connection import Db
from ingestd.store.pricing import BUCKETS

RollupKey = tuple[str, str, str, str, int, str, str]  # session, model, slot, version, tier bits, speed, geo
RollupSums = tuple[int, ...]  # the five buckets (BUCKETS order), row_count, web_search_requests

# The tier bit of each bucket in the rollup's ``tier`` (1 input, 2 output, 4 cache_read, ...).
TIER_BITS = {b: 1 << i for i, b in enumerate(BUCKETS)}

KEY_COLUMNS = ("session_id", "model", "slot", "rate_effective_from", "tier", "speed", "inference_geo")
SUM_COLUMNS = (*BUCKETS, "row_count", "web_search_requests")
ROLLUP_COLUMNS = ", ".join(KEY_COLUMNS + SUM_COLUMNS)
ROLLUP_KEY = ", ".join(KEY_COLUMNS)


def slot_sql(x: str = "t") -> str:
    """The UTC quarter-hour slot of row ``x``'s occurred_at (``YYYY-MM-DDTHH:MMZ``)."""
    return (
        f"substr({x}.occurred_at, 1, 14) || printf('%02d', CAST(substr({x}.occurred_at, 15, 2) AS INTEGER) / 15 * 15)"
        " || 'Z'"
    )


def version_sql(x: str = "t") -> str:
    """Row ``x``'s price version: the latest effective_from of its model's rows at or before its time."""
    return (
        f"COALESCE((SELECT max(p.effective_from) FROM model_pricing p"
        f" WHERE p.model = {x}.model AND p.effective_from <= {x}.occurred_at), '')"
    )


def tier_sql(x: str = "t") -> str:
    """Row ``x``'s tier bits (``TIER_BITS``): a bucket's bit when the prompt exceeds the threshold of
    that bucket's resolved rate row (SPEC §5.1: exactly the threshold is standard). The rows are read
    only when the prompt exceeds the smallest threshold of the model. Integer CASEs rather than
    comparisons, so the central store (PostgreSQL, boolean comparisons) runs the same text."""
    bits = " + ".join(
        f"CASE WHEN {x}.prompt_tokens > (SELECT q.long_context_threshold FROM model_pricing q"
        f" WHERE q.model = {x}.model AND q.bucket = '{b}' AND q.effective_from = (SELECT max(p.effective_from)"
        f" FROM model_pricing p WHERE p.model = {x}.model AND p.bucket = '{b}'"
        f" AND p.effective_from <= {x}.occurred_at))"
        f" THEN {bit} ELSE 0 END"
        for b, bit in TIER_BITS.items()
    )
    return (
        f"CASE WHEN {x}.prompt_tokens > COALESCE((SELECT min(m.long_context_threshold) FROM model_pricing m"
        f" WHERE m.model = {x}.model), {x}.prompt_tokens) THEN {bits} ELSE 0 END"
    )


SLOT_SQL = slot_sql()
RATE_SQL = version_sql()
TIER_SQL = tier_sql()
CANONICAL_SQL = "t.occurred_at IS strftime('%Y-%m-%dT%H:%M:%fZ', t.occurred_at)"
# The sums of a grouped scan, in SUM_COLUMNS order.
SUMS_SQL = ", ".join(f"sum(t.{b})" for b in BUCKETS) + ", count(*), sum(t.web_search_requests)"


def scan_sql(slot: str = SLOT_SQL, rate: str = RATE_SQL, tier: str = TIER_SQL, *, keys: tuple[str, ...] = ()) -> str:
    """The grouped scan of ``token_usage`` the rollup must equal, in ``ROLLUP_COLUMNS`` order.

    Args:
        slot, rate, tier: the dialect's expressions of a row's quarter-hour slot, price version and
            tier bits (SQLite: the defaults; the central store: its ``ingestd_slot`` /
            ``ingestd_version`` / ``ingestd_tiers`` functions, ``ingestd.central.check``).
        keys: grouping columns before the rollup's own (the central store's ``t.host_id``).
    """
    lead = "".join(f"{k}, " for k in keys)
    groups = ", ".join(str(i) for i in range(1, len(keys) + len(KEY_COLUMNS) + 1))
    return (
        f"SELECT {lead}t.session_id, t.model, {slot}, {rate}, {tier}, t.speed, t.inference_geo, {SUMS_SQL}"
        f" FROM token_usage t GROUP BY {groups}"
    )


SCAN_SQL = scan_sql()


def scan(conn: Db) -> dict[RollupKey, RollupSums]:
    """The rollup as a grouped scan of token_usage: key → sums (``SUM_COLUMNS``). Read-only."""
    return {(r[0], r[1], r[2], r[3], r[4], r[5], r[6]): tuple(r[7:]) for r in conn.execute(SCAN_SQL)}


def stored(conn: Db) -> dict[RollupKey, RollupSums]:
    """The rollup table as it is: key → sums (``SUM_COLUMNS``). Read-only."""
    return {
        (r[0], r[1], r[2], r[3], r[4], r[5], r[6]): tuple(r[7:])
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
