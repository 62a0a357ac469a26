"""Price rows in the central store (``ingestd pricing set | load --store URL``, SPEC §5.1, §13).

The store's ``model_pricing`` has the local table's columns and key (pg migrations 0001, 0003), and
its rollup trigger re-prices stored usage when a row is added, as SQLite's does: the same upsert.
"""

from __future__ import annotations

from typing import Any

from ingestd.central.pg import pg_errors, to_pg
from ingestd.store.pricing import UPSERT_SQL, PriceRow, price_params


def add_prices(pg: Any, rows: list[PriceRow], *, verified_at: str) -> int:
    """Insert or replace ``rows`` in the store's ``model_pricing`` in one transaction.

    Args:
        pg: a psycopg connection to a migrated store.
        rows: the parsed rows (``ingestd.store.pricing.parse_rows``).
        verified_at: canonical UTC, for rows that carry none.

    Returns:
        The number of rows written.

    Raises:
        StorageError: the store refused (nothing written).
    """
    sql = to_pg(UPSERT_SQL, True)
    with pg_errors(), pg.transaction():
        for r in rows:
            pg.execute(sql, price_params(r, verified_at))
    return len(rows)
