"""Reading and adding ``model_pricing`` rows (SPEC §5.1).

Adding a row re-prices stored usage through the rollup triggers: no re-ingest.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import apsw

from ingestd.core.timefmt import canonical
from ingestd.errors import InputError
from ingestd.store.connection import write_txn

# Far above any real list price, far below where a REAL stops being exact to the cent:
# a rate like 1e400 is a typo, and stored as a float it would become infinity.
MAX_USD_PER_MTOK = Decimal(1_000_000)

BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


@dataclass(frozen=True, slots=True)
class PriceRow:
    """One rate.

    Attributes:
        model: exact model id as Claude Code writes it.
        bucket: one of ``BUCKETS``.
        usd_per_mtok: Decimal, US dollars per million tokens.
        effective_from: canonical UTC; the rate applies to usage at or after it.
        source: where the rate came from.
        verified_at: canonical UTC or None.
    """

    model: str
    bucket: str
    usd_per_mtok: Decimal
    effective_from: str
    source: str
    verified_at: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "bucket": self.bucket,
            "usd_per_mtok": str(self.usd_per_mtok),
            "effective_from": self.effective_from,
            "source": self.source,
            "verified_at": self.verified_at,
        }


def rate_decimal(value: float | int | str) -> Decimal:
    """The stored rate as an exact Decimal (``repr`` of the float, so 0.3 is 0.3)."""
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def list_prices(conn: apsw.Connection, model: str | None = None) -> list[PriceRow]:
    """Every price row (optionally for one model), ordered by model, bucket, effective_from. Read-only."""
    sql = "SELECT model, bucket, usd_per_mtok, effective_from, source, verified_at FROM model_pricing"
    params: tuple[Any, ...] = ()
    if model is not None:
        sql += " WHERE model = ?"
        params = (model,)
    sql += " ORDER BY model, bucket, effective_from"
    return [PriceRow(r[0], r[1], rate_decimal(r[2]), r[3], r[4], r[5]) for r in conn.execute(sql, params)]


def parse_rows(doc: Any, *, default_source: str) -> list[PriceRow]:
    """Validate price rows given as JSON.

    Accepts a list of objects ``{"model", "effective_from", "rates": {bucket: usd_per_mtok, ...},
    "source"?}`` or of flat objects ``{"model", "bucket", "usd_per_mtok", "effective_from"}``.

    Raises:
        InputError: naming the first bad entry and what is wrong with it.
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
    out: list[PriceRow] = []
    for i, item in enumerate(doc):
        if not isinstance(item, dict):
            raise InputError(f"price row {i}: not an object")
        model = item.get("model")
        if not isinstance(model, str) or not model:
            raise InputError(f"price row {i}: 'model' must be a non-empty string")
        eff = canonical(item.get("effective_from"))
        if eff is None:
            raise InputError(f"price row {i}: 'effective_from' must be a date or a zoned ISO-8601 instant")
        source = item.get("source") or default_source
        rates = item.get("rates")
        if rates is None and "bucket" in item:
            rates = {item["bucket"]: item.get("usd_per_mtok")}
        if not isinstance(rates, dict) or not rates:
            raise InputError(f"price row {i}: give 'rates' as {{bucket: usd_per_mtok}}")
        for bucket, rate in rates.items():
            if bucket not in BUCKETS:
                raise InputError(f"price row {i}: unknown bucket {bucket!r} (one of {', '.join(BUCKETS)})")
            if isinstance(rate, bool) or not isinstance(rate, int | float | str):
                raise InputError(f"price row {i}: rate for {bucket} must be a number")
            try:
                value = Decimal(str(rate))
            except ArithmeticError as e:
                raise InputError(f"price row {i}: rate for {bucket} is not a number: {rate!r}") from e
            if not value.is_finite() or value < 0 or value > MAX_USD_PER_MTOK:
                raise InputError(
                    f"price row {i}: rate for {bucket} must be a number from 0 to {MAX_USD_PER_MTOK} (USD per MTok)"
                )
            out.append(PriceRow(model, bucket, value, eff, str(source), None))
    return out


def add_prices(conn: apsw.Connection, rows: list[PriceRow], *, verified_at: str) -> int:
    """Insert or replace price rows in one transaction; the rollup re-prices through its triggers.

    Returns:
        The number of rows written.
    """

    def run(c: apsw.Connection) -> int:
        for r in rows:
            c.execute(
                "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source, verified_at)"
                " VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (model, bucket, effective_from) DO UPDATE SET"
                " usd_per_mtok = excluded.usd_per_mtok, source = excluded.source, verified_at = excluded.verified_at",
                (
                    r.model,
                    r.bucket,
                    float(r.usd_per_mtok),
                    r.effective_from,
                    r.source,
                    r.verified_at or verified_at,
                ),
            )
        return len(rows)

    return write_txn(conn, run)
