"""One daemon per database."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestd.daemon import lock
from ingestd.errors import DaemonError


def test_second_lock_refuses_with_a_clear_message_then_frees(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    held = lock.acquire(db)
    with pytest.raises(DaemonError, match="already running"):
        lock.acquire(db)
    held.release()
    lock.acquire(db).release()
