"""Tests here run on the small seeded database of ``tests.seeded``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.seeded import seed


@pytest.fixture
def db_path(tmp_path: Path) -> Iterator[Path]:
    """A migrated database holding ``seed``'s rows."""
    path = tmp_path / "ingestd.db"
    conn = connect(path)
    migrate(conn)
    seed(conn)
    conn.close()
    yield path
