"""Token and cost accumulation shared by every report (SPEC §5).

A ``Usage`` adds up grouped token rows, each carrying its resolved rate key
(``rate_effective_from``, ``''`` when unpriced), and prices them exactly with
``Decimal``: ``tokens * usd_per_mtok / 10**6``. Unpriced usage is kept per model and
bucket beside the priced total, never folded into it as $0.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ingestd.core.billing import Rate, price
from ingestd.core.speeds import multipliers
from ingestd.core.uncounted import USAGE_NOT_COUNTED
from ingestd.store.connection import Db, Reader
from ingestd.store.pricing import BUCKETS, rate_decimal
from ingestd.store.rollup import TIER_BITS

UNPRICED = ""  # the rollup's sentinel rate key (migrations/0002)
UNCOUNTED_LISTED = 3  # reasons an answer quotes of its uncounted records (``ingestd status`` lists all)


# One price row as the reports use it: ``core.billing.Rate`` (SPEC §5.1, migrations 0011, 0027).
Price = Rate


class RateTable(dict[tuple[str, str, str], Price]):
    """Every price row as ``(model, bucket, effective_from) -> Price``, and the rate rule over them."""

    __slots__ = ("_dates",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._dates: dict[tuple[str, str], list[str]] | None = None

    def bucket_rate(self, model: str, bucket: str, version: str) -> str:
        """The effective_from of ``bucket``'s rate row at price version ``version`` (the rollup's
        ``rate_effective_from``): its latest row at or before the version; ``UNPRICED`` when none."""
        if version == UNPRICED:
            return UNPRICED
        if self._dates is None:
            dates: dict[tuple[str, str], list[str]] = {}
            for m, b, e in self:
                dates.setdefault((m, b), []).append(e)
            for v in dates.values():
                v.sort()
            self._dates = dates
        found = self._dates.get((model, bucket))
        if not found:
            return UNPRICED
        i = bisect_right(found, version)
        return found[i - 1] if i else UNPRICED


def load_rates(conn: Db) -> RateTable:
    """Every price row as ``(model, bucket, effective_from) -> Price``. Read-only."""
    return RateTable(
        {
            (r[0], r[1], r[2]): Price(
                rate_decimal(r[3]),
                rate_decimal(r[4]) if r[4] is not None else None,
                multipliers(r[5]),
                rate_decimal(r[6]) if r[6] is not None else None,
                multipliers(r[7]),
            )
            for r in conn.execute(
                "SELECT model, bucket, effective_from, usd_per_mtok, long_context_usd_per_mtok, speed_multipliers,"
                " web_search_usd_per_request, geo_multipliers FROM model_pricing"
            )
        }
    )


def uncounted_usage(
    conn: Reader,
    *,
    session: str | None = None,
    since: str | None = None,
    until: str | None = None,
    host: str | None = None,
) -> tuple[int, list[str]]:
    """Records whose usage no bucket counts (quarantine reason ``tokens``, and ``timestamp`` for an
    undated record's: its detail ends ``uncounted.USAGE_NOT_COUNTED``), in scope: of ``session``,
    of a session active in ``[since, until)`` (canonical UTC; a record of no known session is
    always in scope: nothing dates it), of ``host`` in the central store. Returns the count and the
    first ``UNCOUNTED_LISTED`` distinct reasons. Read-only.
    """
    # quarantined ``tokens``, and undated usage (a record whose timestamp is absent or refused, in
    # a file with no valid one)
    where = [f"(q.reason = 'tokens' OR (q.reason = 'timestamp' AND q.detail LIKE '%{USAGE_NOT_COUNTED}'))"]
    params: list[Any] = []
    if session is not None:
        where.append("q.session_id = ?")
        params.append(session)
    if since is not None:
        where.append("(s.id IS NULL OR s.last_activity_at IS NULL OR s.last_activity_at >= ?)")
        params.append(since)
    if until is not None:
        where.append("(s.id IS NULL OR s.started_at IS NULL OR s.started_at < ?)")
        params.append(until)
    if host is not None and getattr(conn, "central", False):
        where.append("q.host_id = ?")
        params.append(host)
    sql = f"SELECT count(*) FROM quarantine q LEFT JOIN sessions s ON s.id = q.session_id WHERE {' AND '.join(where)}"
    n = 0
    for (total,) in conn.execute(sql, tuple(params)):
        n = int(total or 0)
    if not n:
        return 0, []
    details = [
        str(r[0])
        for r in conn.execute(
            "SELECT DISTINCT q.detail FROM quarantine q LEFT JOIN sessions s ON s.id = q.session_id"
            f" WHERE {' AND '.join(where)} ORDER BY 1 LIMIT {UNCOUNTED_LISTED}",
            tuple(params),
        )
    ]
    return n, details


UNREAD_LISTED = 3  # files an answer names of those with unread bytes


def unread_tails(conn: Reader, *, session: str | None = None) -> tuple[int, int, list[dict[str, Any]]]:
    """Bytes the last read of a transcript held back (a last line without its newline: being
    written, or not yet idle past the grace, or not a JSON object), per the checkpoints: of
    ``session``'s files when given, else of every file (undated: in every window). Returns the
    bytes, the files and the first ``UNREAD_LISTED`` of them (``{"file", "bytes"}``, most bytes
    first). The central store keeps no checkpoints (each host's `status` has its own). Read-only.
    """
    if getattr(conn, "central", False):
        return 0, 0, []
    where = "size > committed_offset" + (" AND session_id = ?" if session is not None else "")
    params: tuple[Any, ...] = (session,) if session is not None else ()
    rows = [
        (str(origin), int(n))
        for origin, n in conn.execute(
            f"SELECT origin, size - committed_offset FROM ingest_checkpoints WHERE {where} ORDER BY 2 DESC, 1",
            params,
        )
    ]
    listed = [{"file": origin, "bytes": n} for origin, n in rows[:UNREAD_LISTED]]
    return sum(n for _, n in rows), len(rows), listed


def money(value: Decimal) -> str:
    """Exact decimal string without exponent or trailing zeros (``"0"``, ``"1.2345"``)."""
    if value == 0:
        return "0"
    text = format(value.normalize(), "f")
    return text


@dataclass(slots=True)
class Usage:
    """Tokens per bucket, priced cost and unpriced usage of one group.

    Attributes:
        totals: tokens per bucket (all five buckets, priced or not).
        cost_usd: Decimal, US dollars of the priced part.
        billed_messages: messages (counted with the ``output`` bucket, which every message has).
        unpriced: model -> bucket -> [tokens, rows] for usage no price row can price: no effective
            rate, or a dimension the rate row has no price for (SPEC §5.1: never the standard rate).
        reasons: model -> why its usage is unpriced (``no_rate``, ``long_context``, ``speed:<s>``,
            ``web_search``).
        web_search_requests: int, server tool requests counted (priced or not).
        unpriced_requests: model -> web search requests with no fee.
        uncounted: records whose usage is in no bucket (quarantined ``tokens``: a counter that is not
            a count, usage without a message id, an ``iterations`` entry ingestd cannot bill), and
            ``uncounted_details`` the first few of their reasons; any makes the answer incomplete.
        unread_bytes: int, bytes of transcripts not read yet (``unread_tails``) in ``unread_files``
            files, ``unread_listed`` the first few; any makes the answer incomplete.
    """

    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0))
    cost_usd: Decimal = field(default_factory=Decimal)
    billed_messages: int = 0
    unpriced: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    reasons: dict[str, set[str]] = field(default_factory=dict)
    web_search_requests: int = 0
    unpriced_requests: dict[str, int] = field(default_factory=dict)
    uncounted: int = 0
    uncounted_details: list[str] = field(default_factory=list)
    unread_bytes: int = 0
    unread_files: int = 0
    unread_listed: list[dict[str, Any]] = field(default_factory=list)

    def add_unread(self, nbytes: int, files: int, listed: Sequence[dict[str, Any]]) -> None:
        """Note ``nbytes`` unread bytes in ``files`` files (``unread_tails``), ``listed`` the first few."""
        self.unread_bytes += nbytes
        self.unread_files += files
        for f in listed:
            if len(self.unread_listed) < UNREAD_LISTED and f not in self.unread_listed:
                self.unread_listed.append(f)

    def add_uncounted(self, records: int, details: Sequence[str]) -> None:
        """Note ``records`` quarantined records whose usage no bucket holds (``uncounted_usage``)."""
        self.uncounted += records
        for d in details:
            if len(self.uncounted_details) < UNCOUNTED_LISTED and d not in self.uncounted_details:
                self.uncounted_details.append(d)

    def add(
        self,
        model: str,
        bucket: str,
        rate_key: str,
        tokens: int,
        rows: int,
        rates: RateTable | Mapping[tuple[str, str, str], Price],
        tier: int = 0,
        speed: str = "",
        searches: int = 0,
        geo: str = "",
    ) -> None:
        """Add one grouped row (tokens and row count of ``model``/``bucket`` at ``rate_key``).

        Args:
            tier: 1 when these messages' prompts exceed the rate row's long-context threshold.
            speed: ``usage.speed`` of these messages ('' for standard).
            searches: web search requests of these messages (on ``output`` rows only).
            geo: their stored ``inference_geo`` ('' for the geos that bill at 1.0).

        Priced by ``core.billing.price`` (the one rule): a rate key with no matching price row, a
        tier with no tier rate, a speed or geo with no multiplier, searches with no fee count as
        unpriced with the reason, never as standard or $0.
        """
        price = rates.get((model, bucket, rate_key)) if rate_key != UNPRICED else None
        self._priced(model, {bucket: price}, {bucket: tokens}, {bucket: bool(tier)}, rows, speed, geo, searches)

    def _priced(
        self,
        model: str,
        prices: Mapping[str, Price | None],
        tokens: Mapping[str, int],
        tiers: Mapping[str, bool],
        rows: int,
        speed: str,
        geo: str,
        searches: int,
    ) -> None:
        """Add a group of ``rows`` messages of ``model`` sharing every pricing fact, priced by the rule."""
        for bucket, n in tokens.items():
            self.totals[bucket] = self.totals.get(bucket, 0) + n
        if "output" in tokens:
            self.billed_messages += rows
        self.web_search_requests += searches
        bill = price(prices, tokens, tiers, speed=speed, geo=geo, searches=searches)
        self.cost_usd += bill.cost_usd
        for bucket, why in bill.unpriced.items():
            slot = self.unpriced.setdefault(model, {}).setdefault(bucket, [0, 0])
            slot[0] += tokens[bucket]
            slot[1] += rows
            self.reasons.setdefault(model, set()).add(why)
        if bill.unpriced_searches:
            self.unpriced_requests[model] = self.unpriced_requests.get(model, 0) + bill.unpriced_searches
            self.reasons.setdefault(model, set()).add(bill.search_reason or "web_search")

    def add_messages(
        self, model: str, version: str, tier: int, speed: str, sums: Sequence[int], rates: RateTable, geo: str = ""
    ) -> None:
        """Add one grouped row of messages, as the rollup holds them (``ingestd.store.rollup``).

        Args:
            model: the messages' model.
            version: their price version (``rate_effective_from``; '' when the model has no price).
            tier: their tier bits (``TIER_BITS``).
            speed: their ``usage.speed``.
            sums: the five bucket sums (``BUCKETS`` order), the message count and the web search
                requests (``SUM_COLUMNS``).
            rates: the price rows; each bucket is priced at its own rate row at ``version``.
            geo: their stored ``inference_geo``.
        """
        rows, searches = int(sums[5]), int(sums[6])
        prices: dict[str, Price | None] = {}
        for bucket in BUCKETS:
            key = rates.bucket_rate(model, bucket, version)
            prices[bucket] = rates.get((model, bucket, key)) if key != UNPRICED else None
        tokens = {bucket: int(sums[i]) for i, bucket in enumerate(BUCKETS)}
        tiers = {bucket: bool(tier & TIER_BITS[bucket]) for bucket in BUCKETS}
        self._priced(model, prices, tokens, tiers, rows, speed, geo, searches)

    def merge(self, other: Usage) -> None:
        """Add ``other`` into this one."""
        for b, n in other.totals.items():
            self.totals[b] = self.totals.get(b, 0) + n
        self.cost_usd += other.cost_usd
        self.billed_messages += other.billed_messages
        self.web_search_requests += other.web_search_requests
        for model, n in other.unpriced_requests.items():
            self.unpriced_requests[model] = self.unpriced_requests.get(model, 0) + n
        self.add_uncounted(other.uncounted, other.uncounted_details)
        self.add_unread(other.unread_bytes, other.unread_files, other.unread_listed)
        for model, why in other.reasons.items():
            self.reasons.setdefault(model, set()).update(why)
        for model, buckets in other.unpriced.items():
            mine = self.unpriced.setdefault(model, {})
            for b, (t, r) in buckets.items():
                slot = mine.setdefault(b, [0, 0])
                slot[0] += t
                slot[1] += r

    @property
    def tokens(self) -> int:
        """All tokens, every bucket."""
        return sum(self.totals.values())

    def unpriced_json(self) -> dict[str, dict[str, Any]]:
        """``{model: {"tokens", "messages", "web_search_requests", "reasons"}}``; messages = the largest
        unpriced bucket row count; reasons as in ``Usage.reasons``."""
        return {
            model: {
                "tokens": sum(t for t, _ in self.unpriced.get(model, {}).values()),
                "messages": max((r for _, r in self.unpriced.get(model, {}).values()), default=0),
                "web_search_requests": self.unpriced_requests.get(model, 0),
                "reasons": sorted(self.reasons.get(model, ())),
            }
            for model in sorted(set(self.unpriced) | set(self.unpriced_requests))
        }

    def to_json(self) -> dict[str, Any]:
        """The SPEC §9 cost keys: totals, tokens, cost_usd (exact string), unpriced, billed_messages."""
        return {
            "totals": {b: self.totals.get(b, 0) for b in BUCKETS},
            "tokens": self.tokens,
            "cost_usd": money(self.cost_usd),
            "cost_complete": not (self.unpriced or self.unpriced_requests or self.uncounted or self.unread_bytes),
            "unpriced": self.unpriced_json(),
            "uncounted": {"records": self.uncounted, "reasons": list(self.uncounted_details)},
            "unread": {"bytes": self.unread_bytes, "files": self.unread_files, "listed": list(self.unread_listed)},
            "billed_messages": self.billed_messages,
            "web_search_requests": self.web_search_requests,
        }
