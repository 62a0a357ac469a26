"""A Datasette plugin (entry point ``datasette``): ingestd's cost rule as SQL functions, and canned
queries of cost per day, model and session built on them, for a database ingestd wrote.

Datasette loads it when ingestd is installed in Datasette's environment (``pipx inject ingestd
datasette`` or the other way round; ``datasette plugins`` lists it). Nothing here prices on its own:
each function hands a rollup row to ``Usage.add_messages``, the rule ``ingestd cost`` applies, so the
canned queries' totals are ``ingestd cost --json``'s to the last digit.

SQL functions, registered on every connection to a database holding ``token_usage_rollup`` and
``model_pricing``:

- ``ingestd_cost_usd(model, rate_effective_from, tier, speed, inference_geo, input, output,
  cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests)``: text, the exact USD
  of the priced part of one rollup row (``"0"`` when nothing of it is priced).
- ``ingestd_unpriced_tokens(...)`` (the same arguments): int, the row's tokens no rate prices.
- ``ingestd_usd_sum(text)``: an aggregate, the exact sum of such amounts as text.
- ``ingestd_search_terms(text)``: the FTS5 query ``ingestd search`` makes of ``text`` (each term a
  quoted phrase, all required; for a text with no term, a phrase with no word, which matches no row), so a canned search
  takes any words, punctuation included, as the CLI does.

The price rows are read from the database on first use and again when they are over
``RATES_TTL_S`` old, so a ``pricing set`` shows within seconds. Days are UTC slots (``ingestd cost
--tz`` for another zone).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from datasette import hookimpl as _hookimpl

from ingestd.errors import InputError
from ingestd.report.search import literal_query
from ingestd.report.usage import RateTable, Usage, load_rates, money

# Datasette's marker is untyped; the hooks below keep their own signatures.
hookimpl: Callable[[Callable[..., Any]], Callable[..., Any]] = _hookimpl

RATES_TTL_S = 2.0
ROW_ARGS = (
    "model, rate_effective_from, tier, speed, inference_geo,"
    " input, output, cache_read, cache_write_5m, cache_write_1h, row_count, web_search_requests"
)
_REQUIRED = ("token_usage_rollup", "model_pricing")


class _Rates:
    """The price rows of one database file, re-read when older than ``RATES_TTL_S``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.loaded_at = -RATES_TTL_S
        self.table: RateTable = RateTable({})
        self._last: tuple[tuple[Any, ...], RateTable, Usage] | None = None

    def get(self) -> RateTable:
        now = time.monotonic()
        if now - self.loaded_at >= RATES_TTL_S:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                self.table = load_rates(conn)  # type: ignore[arg-type]  # a DB-API connection reads it too
            finally:
                conn.close()
            self.loaded_at = now
        return self.table

    def usage(self, args: tuple[Any, ...]) -> Usage:
        """One rollup row (``ROW_ARGS``) priced; the row asked for last is priced once, however many
        of the functions read it (a canned query asks its cost and its unpriced tokens in turn).
        The answer is read, never changed."""
        table = self.get()
        if self._last is not None and self._last[0] == args and self._last[1] is table:
            return self._last[2]
        model, version, tier, speed, geo, *sums = args
        u = Usage()
        u.add_messages(str(model), str(version), int(tier), str(speed), [int(x) for x in sums], table, str(geo))
        self._last = (args, table, u)
        return u


class _UsdSum:
    """``ingestd_usd_sum``: exact decimal addition of USD amounts given as text."""

    def __init__(self) -> None:
        self.total = Decimal(0)

    def step(self, value: Any) -> None:
        if value is not None:
            self.total += Decimal(value)

    def finalize(self) -> Any:
        return money(self.total)


def register(conn: sqlite3.Connection) -> bool:
    """Register the functions on ``conn`` if it is an ingestd database; True when registered."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    path = next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"), "")
    if not set(_REQUIRED) <= names or not path:
        return False
    rates = _Rates(path)
    n = ROW_ARGS.count(",") + 1
    conn.create_function("ingestd_cost_usd", n, lambda *a: format(rates.usage(a).cost_usd, "f"), deterministic=False)
    conn.create_function(
        "ingestd_unpriced_tokens",
        n,
        lambda *a: sum(t for b in rates.usage(a).unpriced.values() for t, _ in b.values()),
        deterministic=False,
    )
    conn.create_aggregate("ingestd_usd_sum", 1, _UsdSum)
    conn.create_function("ingestd_search_terms", 1, _search_terms, deterministic=True)
    return True


_NO_ROW = '"."'  # a phrase without a word: FTS5 matches no row (MATCH NULL or "" is a syntax error)


def _search_terms(text: object) -> str:
    try:
        return literal_query(text) if isinstance(text, str) else _NO_ROW
    except InputError:
        return _NO_ROW


@hookimpl
def prepare_connection(conn: sqlite3.Connection) -> None:
    register(conn)


_COST = f"ingestd_usd_sum(ingestd_cost_usd({ROW_ARGS}))"
_UNPRICED = f"sum(ingestd_unpriced_tokens({ROW_ARGS}))"
_TOKENS = "sum(input + output + cache_read + cache_write_5m + cache_write_1h)"

QUERIES: dict[str, dict[str, str]] = {
    "cost_per_day": {
        "title": "Cost per UTC day and model",
        "description": "Priced by ingestd's rule; unpriced_tokens: tokens no rate prices (not in cost_usd).",
        "sql": (
            f"select substr(slot, 1, 10) as day, model, sum(row_count) as messages, {_TOKENS} as tokens,"
            f" {_COST} as cost_usd, {_UNPRICED} as unpriced_tokens"
            " from token_usage_rollup group by 1, 2 order by 1 desc, 2"
        ),
    },
    "cost_per_model": {
        "title": "Cost per model",
        "sql": (
            f"select model, sum(row_count) as messages, {_TOKENS} as tokens, {_COST} as cost_usd,"
            f" {_UNPRICED} as unpriced_tokens from token_usage_rollup group by 1 order by tokens desc"
        ),
    },
    "cost_per_session": {
        "title": "Cost per session",
        "sql": (
            f"select r.session_id, s.project_path, coalesce(s.title, s.slug) as name, sum(r.row_count) as messages,"
            f" {_TOKENS} as tokens, {_COST} as cost_usd, {_UNPRICED} as unpriced_tokens"
            " from token_usage_rollup r left join sessions s on s.id = r.session_id group by 1 order by tokens desc"
        ),
    },
}


@hookimpl
def canned_queries(datasette: Any, database: str) -> dict[str, dict[str, str]] | None:
    db = datasette.databases.get(database)
    if db is None or db.path is None:
        return None
    conn = sqlite3.connect(f"file:{db.path}?mode=ro", uri=True)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()
    return dict(QUERIES) if set(_REQUIRED) <= names else None
