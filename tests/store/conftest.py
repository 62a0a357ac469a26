"""Shared by the store tests: a migrated connection, and the log's stored payloads."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from ingestd.store.connection import connect
from ingestd.store.migrate import migrate


@pytest.fixture
def conn(tmp_path: Path) -> apsw.Connection:
    c = connect(tmp_path / "i.db")
    migrate(c)
    return c


def stored(conn: apsw.Connection) -> list[tuple[str, int, bytes]]:
    """(idempotency key, codec, payload as stored) of every log row, in id order."""
    return [
        (str(k), int(c), bytes(p))
        for k, c, p in conn.execute("SELECT idempotency_key, codec, payload FROM events_raw ORDER BY id")
    ]
