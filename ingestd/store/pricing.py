"""Reading and adding ``model_pricing`` rows (SPEC §5.1).

Adding a row re-prices stored usage through the rollup triggers: no re-ingest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

from ingestd.core.speeds import multipliers
from ingestd.core.timefmt import canonical
from ingestd.errors import InputError
from ingestd.store.connection import Db, Reader, write_txn

# Far above any real list price, far below where a REAL stops being exact to the cent:
# a rate like 1e400 is a typo, and stored as a float it would become infinity.
MAX_USD_PER_MTOK = Decimal(1_000_000)

BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


@dataclass(frozen=True, slots=True)
class PriceRow:
    """One rate, with the optional price dimensions of SPEC §5.1 (migration 0011).

    Attributes:
        model: exact model id as Claude Code writes it.
        bucket: one of ``BUCKETS``.
        usd_per_mtok: Decimal, US dollars per million tokens (standard tier, standard speed).
        effective_from: canonical UTC; the rate applies to usage at or after it.
        source: where the rate came from.
        verified_at: canonical UTC or None.
        long_context_threshold: int | None, tokens; a request whose prompt (input + cache read +
            both cache writes) exceeds it is priced at ``long_context_usd_per_mtok`` (exactly at it:
            standard). None: no long-context tier.
        long_context_usd_per_mtok: Decimal | None, this bucket's tier rate (set with the threshold).
        speed_multipliers: dict speed -> Decimal, multiplies the rate for ``usage.speed`` (standard
            speed needs no entry; a speed with none is unpriced).
        web_search_usd_per_request: Decimal | None, US dollars per web search request; only on the
            ``output`` row (a message's requests are counted there, once per message).
        geo_multipliers: dict inference geo -> Decimal, multiplies the rate for ``usage.inference_geo``
            (``global``, ``not_available``, empty and absent need no entry; a geo with none is unpriced).
        withdrawn: the dimensions this version says it does not have (``long_context``,
            ``speed:<s>``, ``geo:<g>``, ``web_search``): given as ``null`` / ``--no-...``, not merely
            left out. Not stored: it only tells ``dropped_dimensions`` the change is meant.
    """

    model: str
    bucket: str
    usd_per_mtok: Decimal
    effective_from: str
    source: str
    verified_at: str | None
    long_context_threshold: int | None = None
    long_context_usd_per_mtok: Decimal | None = None
    speed_multipliers: dict[str, Decimal] = field(default_factory=dict)
    web_search_usd_per_request: Decimal | None = None
    geo_multipliers: dict[str, Decimal] = field(default_factory=dict)
    withdrawn: frozenset[str] = field(default=frozenset(), compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "bucket": self.bucket,
            "usd_per_mtok": str(self.usd_per_mtok),
            "effective_from": self.effective_from,
            "source": self.source,
            "verified_at": self.verified_at,
            "long_context_threshold": self.long_context_threshold,
            "long_context_usd_per_mtok": _str(self.long_context_usd_per_mtok),
            "speed_multipliers": {k: str(v) for k, v in sorted(self.speed_multipliers.items())},
            "web_search_usd_per_request": _str(self.web_search_usd_per_request),
            "geo_multipliers": {k: str(v) for k, v in sorted(self.geo_multipliers.items())},
        }


def _str(v: Decimal | None) -> str | None:
    return None if v is None else str(v)


def rate_decimal(value: float | int | str) -> Decimal:
    """The stored rate as an exact Decimal (``repr`` of the float, so 0.3 is 0.3)."""
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


_COLUMNS = (
    "model, bucket, usd_per_mtok, effective_from, source, verified_at, long_context_threshold,"
    " long_context_usd_per_mtok, speed_multipliers, web_search_usd_per_request, geo_multipliers"
)


def list_prices(conn: Db, model: str | None = None) -> list[PriceRow]:
    """Every price row (optionally for one model), ordered by model, bucket, effective_from. Read-only."""
    sql = f"SELECT {_COLUMNS} FROM model_pricing"
    params: tuple[Any, ...] = ()
    if model is not None:
        sql += " WHERE model = ?"
        params = (model,)
    sql += " ORDER BY model, bucket, effective_from"
    return [
        PriceRow(
            r[0],
            r[1],
            rate_decimal(r[2]),
            r[3],
            r[4],
            r[5],
            r[6],
            rate_decimal(r[7]) if r[7] is not None else None,
            multipliers(r[8]),
            rate_decimal(r[9]) if r[9] is not None else None,
            multipliers(r[10]),
        )
        for r in conn.execute(sql, params)
    ]


def _bad(i: int, field: str, text: str) -> InputError:
    """The refusal of JSON price row ``i``: ``price row I: TEXT``, with ``row`` and ``field`` (the
    dotted key that is wrong, e.g. ``rates.input``, ``long_context.threshold``, ``speed_multipliers.fast``)
    as context, so a caller whose user gave options, not rows, can name the option instead."""
    return InputError(f"price row {i}: {text}", row=i, field=field, text=text)


def _usd(i: int, field: str, what: str, rate: Any) -> Decimal:
    """A price given in JSON as an exact Decimal from 0 to ``MAX_USD_PER_MTOK``, else InputError."""
    if isinstance(rate, bool) or not isinstance(rate, int | float | str):
        raise _bad(i, field, f"{what} must be a number")
    try:
        value = Decimal(str(rate))
    except ArithmeticError as e:
        raise _bad(i, field, f"{what} is not a number: {rate!r}") from e
    if not value.is_finite() or value < 0 or value > MAX_USD_PER_MTOK:
        raise _bad(i, field, f"{what} must be a number from 0 to {MAX_USD_PER_MTOK}")
    return value


@dataclass(frozen=True, slots=True)
class _Dims:
    """The price dimensions of one JSON price row (``_dimensions``)."""

    threshold: int | None
    tier: dict[str, Decimal]
    speeds: dict[str, Decimal]
    geos: dict[str, Decimal]
    fee: Decimal | None
    withdrawn: frozenset[str]


def _table(i: int, item: dict[str, Any], key: str, what: str, kind: str) -> tuple[dict[str, Decimal], set[str]]:
    """A ``{name: multiplier}`` table of a JSON row; a ``null`` multiplier withdraws that name (priced
    at 1 from this row: the version says it has no multiplier)."""
    doc = item.get(key) or {}
    if not isinstance(doc, dict):
        raise _bad(i, key, f"'{key}' must be {{{what}: multiplier}}")
    out: dict[str, Decimal] = {}
    gone: set[str] = set()
    for k, v in doc.items():
        if v is None:
            out[str(k)] = Decimal(1)
            gone.add(f"{kind}:{k}")
        else:
            out[str(k)] = _usd(i, f"{key}.{k}", f"{what} multiplier for {k!r}", v)
    return out, gone


def _dimensions(i: int, item: dict[str, Any], buckets: list[str]) -> _Dims:
    """The tier, multipliers, fee and explicit withdrawals of one JSON price row.

    ``"long_context": null`` says this version has no tier (prompts over any threshold are priced at
    the standard rate); a multiplier of ``null`` says that speed or geo costs the standard rate;
    ``"server_tool_fees": null`` (or ``{"web_search_requests": null}``) says searches have no fee. A
    key left out says nothing: ``dropped_dimensions`` warns when the row before had it.
    """
    threshold: int | None = None
    tier: dict[str, Decimal] = {}
    withdrawn: set[str] = set()
    lc = item.get("long_context")
    if "long_context" in item and lc is None:
        withdrawn.add("long_context")
    if lc is None and item.get("long_context_threshold") is not None:  # the flat shape `pricing list --json` prints
        lc = {
            "threshold": item.get("long_context_threshold"),
            "rates": {buckets[0]: item.get("long_context_usd_per_mtok")},
        }
    if lc is not None:
        if not isinstance(lc, dict):
            raise _bad(i, "long_context", '\'long_context\' must be {"threshold": tokens, "rates": {bucket: usd}}')
        t = lc.get("threshold")
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            raise _bad(i, "long_context.threshold", "long_context threshold must be a whole number of tokens >= 0")
        threshold = t
        rates = lc.get("rates")
        if not isinstance(rates, dict) or set(rates) != set(buckets):
            raise _bad(
                i,
                "long_context.rates",
                f"long_context rates must name exactly the buckets of the row ({', '.join(buckets)})",
            )
        tier = {b: _usd(i, f"long_context.rates.{b}", f"long_context rate for {b}", v) for b, v in rates.items()}
    speeds, gone = _table(i, item, "speed_multipliers", "speed", "speed")
    withdrawn |= gone
    geos, gone = _table(i, item, "geo_multipliers", "inference geo", "geo")
    withdrawn |= gone
    fee_doc = item.get("server_tool_fees")
    fee: Any = item.get("web_search_usd_per_request")
    no_fee = ("server_tool_fees" in item and fee_doc is None) or (
        isinstance(fee_doc, dict) and "web_search_requests" in fee_doc and fee_doc["web_search_requests"] is None
    )
    if fee_doc is not None:
        if not isinstance(fee_doc, dict) or set(fee_doc) - {"web_search_requests"}:
            raise _bad(i, "server_tool_fees", "'server_tool_fees' must be {\"web_search_requests\": usd_per_request}")
        fee = fee_doc.get("web_search_requests")
    if no_fee:
        fee = 0
        withdrawn.add("web_search")
    if fee is not None:
        if "output" not in buckets:
            raise _bad(i, "server_tool_fees", "a server tool fee goes on the row's output rate (give 'output' too)")
        fee = _usd(i, "server_tool_fees", "web search fee", fee)
    return _Dims(threshold, tier, speeds, geos, fee, frozenset(withdrawn))


def _row_list(doc: Any) -> list[Any]:
    """The list of price rows a document holds: itself, its ``rows``, or one row object on its own.

    Raises:
        InputError: anything else, saying what was expected.
    """
    expected = (
        'expected a JSON array of price rows ([{"model", "effective_from", "rates": {bucket: usd}}, ...]),'
        ' or {"rows": [...]} as `ingestd pricing list --json` prints'
    )
    if isinstance(doc, dict):
        if "rows" in doc:
            doc = doc["rows"]
        elif "model" in doc:
            doc = [doc]  # one row on its own
        else:
            keys = ", ".join(repr(k) for k in list(doc)[:5]) or "no keys"
            raise InputError(f"{expected}; got an object with {keys}")
    if not isinstance(doc, list):
        kind = {bool: "true/false", int: "a number", float: "a number", str: "a string"}.get(type(doc), "null")
        raise InputError(f"{expected}; got {kind}")
    return doc


# (model, bucket, effective_from) -> (JSON item index, row): the rows parsed so far.
_Seen = dict[tuple[str, str, str], tuple[int, PriceRow]]


def parse_rows(doc: Any, *, default_source: str) -> list[PriceRow]:
    """Validate price rows given as JSON.

    Accepts a list of objects ``{"model", "effective_from", "rates": {bucket: usd_per_mtok, ...},
    "source"?}`` or of flat objects ``{"model", "bucket", "usd_per_mtok", "effective_from"}``.

    Raises:
        InputError: naming the first bad entry and what is wrong with it, or two entries that price
            one (model, bucket, effective_from) differently (``_add_once``).
    """
    seen: _Seen = {}
    for i, item in enumerate(_row_list(doc)):
        if not isinstance(item, dict):
            raise _bad(i, "", "not an object")
        model = item.get("model")
        if not isinstance(model, str) or not model:
            raise _bad(i, "model", "'model' must be a non-empty string")
        eff = canonical(item.get("effective_from"))
        if eff is None:
            raise _bad(i, "effective_from", "'effective_from' must be a date or a zoned ISO-8601 instant")
        source = item.get("source") or default_source
        rates = item.get("rates")
        if rates is None and "bucket" in item:
            rates = {item["bucket"]: item.get("usd_per_mtok")}
        if not isinstance(rates, dict) or not rates:
            raise _bad(i, "rates", "give 'rates' as {bucket: usd_per_mtok}")
        for bucket in rates:
            if bucket not in BUCKETS:
                raise _bad(i, "rates", f"unknown bucket {bucket!r} (one of {', '.join(BUCKETS)})")
        dims = _dimensions(i, item, list(rates))
        for bucket, rate in rates.items():
            value = _usd(i, f"rates.{bucket}", f"rate for {bucket} (USD per MTok)", rate)
            _add_once(
                seen,
                i,
                PriceRow(
                    model,
                    bucket,
                    value,
                    eff,
                    str(source),
                    None,
                    dims.threshold,
                    dims.tier.get(bucket),
                    dims.speeds,
                    dims.fee if bucket == "output" else None,
                    dims.geos,
                    dims.withdrawn,
                ),
            )
    return [row for _, row in seen.values()]  # in first-seen order


# Insert or replace one price row (SQLite and PostgreSQL alike; ``price_params`` binds it).
UPSERT_SQL = (
    f"INSERT INTO model_pricing ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (model, bucket, effective_from) DO UPDATE SET"
    " usd_per_mtok = excluded.usd_per_mtok, source = excluded.source, verified_at = excluded.verified_at,"
    " long_context_threshold = excluded.long_context_threshold,"
    " long_context_usd_per_mtok = excluded.long_context_usd_per_mtok,"
    " speed_multipliers = excluded.speed_multipliers,"
    " web_search_usd_per_request = excluded.web_search_usd_per_request,"
    " geo_multipliers = excluded.geo_multipliers"
)


def price_params(r: PriceRow, verified_at: str) -> tuple[Any, ...]:
    """``UPSERT_SQL``'s parameters for ``r`` (``verified_at``: canonical UTC, when the row has none). Pure."""
    return (
        r.model,
        r.bucket,
        float(r.usd_per_mtok),
        r.effective_from,
        r.source,
        r.verified_at or verified_at,
        r.long_context_threshold,
        float(r.long_context_usd_per_mtok) if r.long_context_usd_per_mtok is not None else None,
        orjson.dumps({k: float(v) for k, v in r.speed_multipliers.items()}).decode() if r.speed_multipliers else None,
        float(r.web_search_usd_per_request) if r.web_search_usd_per_request is not None else None,
        orjson.dumps({k: float(v) for k, v in r.geo_multipliers.items()}).decode() if r.geo_multipliers else None,
    )


def _add_once(seen: _Seen, i: int, row: PriceRow) -> None:
    """Add ``row`` (of JSON item ``i``) unless an equal row of its (model, bucket, effective_from)
    came before; refuse one that differs: only one can be stored, and the last must not win silently.

    Raises:
        InputError: naming both items and the two rows.
    """
    key = (row.model, row.bucket, row.effective_from)
    first = seen.get(key)
    if first is None:
        seen[key] = (i, row)
        return
    if first[1] != row:
        a, b = first[1].to_json(), row.to_json()
        differ = ", ".join(f"{k} {a[k]!r} vs {b[k]!r}" for k in a if a[k] != b[k])
        raise InputError(
            f"price rows {first[0]} and {i} conflict: both price {row.model} {row.bucket} from {row.effective_from}"
            f" ({differ}); keep one",
            model=row.model,
            bucket=row.bucket,
        )


def add_prices(conn: Db, rows: list[PriceRow], *, verified_at: str) -> int:
    """Insert or replace price rows in one transaction; the rollup re-prices through its triggers.

    Returns:
        The number of rows written.
    """

    def run(c: Db) -> int:
        for r in rows:
            c.execute(UPSERT_SQL, price_params(r, verified_at))
        return len(rows)

    return write_txn(conn, run)


def dropped_dimensions(conn: Reader, rows: list[PriceRow]) -> list[str]:
    """Warnings for new rows that leave out a price dimension the row in force before them had. Read-only.

    ``conn``: a SQLite connection or the central store's (both take this query).

    The row compared is the newest of the same model and bucket from at or before the new row's
    ``effective_from`` (the row it replaces, else the one it follows). A dimension the new row
    withdraws explicitly (``PriceRow.withdrawn``) is meant and not warned about. Each warning says
    what happens from the new row on, and how to keep the dimension or say it is withdrawn.

    Returns:
        One line per (row, dimension) left out, in ``rows`` order.
    """
    out: list[str] = []
    for r in rows:
        prev = conn.execute(
            "SELECT effective_from, long_context_threshold, speed_multipliers, web_search_usd_per_request,"
            " geo_multipliers FROM model_pricing WHERE model = ? AND bucket = ? AND effective_from <= ?"
            " ORDER BY effective_from DESC LIMIT 1",
            (r.model, r.bucket, r.effective_from),
        ).fetchall()
        if not prev:
            continue
        since, threshold, speeds, fee, geos = prev[0]
        lost: list[tuple[str, str]] = []  # (what, what happens and how to say what is meant)
        if threshold is not None and r.long_context_threshold is None and "long_context" not in r.withdrawn:
            lost.append(
                (
                    f"its long-context tier (over {threshold} tokens)",
                    f"prompts over {threshold} tokens are priced at the standard rate from then on (give the tier"
                    ' again to keep it, or --no-long-context / "long_context": null to say this version has none)',
                )
            )
        for label, usage, flag, key, base, before, now in (
            ("speed", "at speed", "speed", "speed_multipliers", "standard", speeds, r.speed_multipliers),
            ("inference geo", "with inference_geo", "geo", "geo_multipliers", "global", geos, r.geo_multipliers),
        ):
            gone = sorted(n for n in set(multipliers(before)) - set(now) if f"{flag}:{n}" not in r.withdrawn)
            if gone:
                names = ", ".join(gone)
                lost.append(
                    (
                        f"its {label} multipliers for {names}",
                        f"usage {usage} {names} is unpriced from then on (give --{flag} NAME=X again, or"
                        f' --no-{flag} NAME / "{key}": {{"NAME": null}} if it costs the {base} rate)',
                    )
                )
        if fee is not None and r.web_search_usd_per_request is None and "web_search" not in r.withdrawn:
            lost.append(
                (
                    "its web-search fee",
                    "web searches are unpriced from then on (give --web-search-fee again, or --no-web-search-fee"
                    ' / "server_tool_fees": null if searches have no fee)',
                )
            )
        out += [
            f"{r.model} {r.bucket} from {r.effective_from} drops {what} that the row from {since} had: {then}"
            for what, then in lost
        ]
    return out
