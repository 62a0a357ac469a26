"""The database identity stamped on edges is chosen once and kept."""

from __future__ import annotations

from pathlib import Path

from ingestd.store.connection import connect
from ingestd.store.identity import database_identity


def test_identity_is_created_once_and_shared_by_every_connection(db_path: Path) -> None:
    first = database_identity(connect(db_path), hostname="host-a")
    again = database_identity(connect(db_path), hostname="host-b")
    assert first == again
    assert first.host_id == "host-a"
    assert len(first.instance) == 32
