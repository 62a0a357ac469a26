"""Database helpers for the ingest tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw

from ingestd.errors import StorageError
from ingestd.ingest import readfile
from ingestd.projection.dump import TABLES, canonical_rows
from ingestd.store import writer
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.payload import register_sql


def new_db(path: Path) -> apsw.Connection:
    conn = connect(path)
    migrate(conn)
    register_sql(conn)  # payload_bytes(codec, payload): the bytes as read
    return conn


def dump(conn: apsw.Connection) -> dict[str, list[Any]]:
    """Every projection table as replay compares it (``ingestd.projection.dump``)."""
    return {t: canonical_rows(conn, t) for t, _ in TABLES}


def count(conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()) -> int:
    v: Any = conn.execute(sql, params).fetchall()[0][0]
    return int(v)


def refuse_second_batch(monkeypatch: Any) -> list[int]:
    """Make the ingest writer refuse its second batch with ``StorageError("disk full")`` (a
    ``pytest.MonkeyPatch`` on ``readfile.apply_isolating``); returns the rows of each batch tried."""
    real = writer.apply_isolating
    calls: list[int] = []

    def refusing(conn: Any, rows: Any, **kw: Any) -> Any:
        calls.append(len(rows))
        if len(calls) == 2:
            raise StorageError("disk full")
        return real(conn, rows, **kw)

    monkeypatch.setattr(readfile, "apply_isolating", refusing)
    return calls
