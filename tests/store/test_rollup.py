"""``ingestd.store.rollup.rebuild``: the rollup replaced by the scan (``verify``'s repair). The rollup's
equivalence with the scan is the contract suite's (``tests/stores/test_rollup.py``)."""

from __future__ import annotations

import apsw

from ingestd.store import rollup


def test_rebuild_restores_a_tampered_rollup(db: apsw.Connection) -> None:
    db.execute(
        "INSERT INTO token_usage (session_id, message_id, model, input, occurred_at)"
        " VALUES ('s', 'm1', 'claude-opus-4-6', 10, '2025-05-01T00:00:00Z')"
    )
    db.execute("UPDATE token_usage_rollup SET input = 11")
    assert rollup.differences(db)
    rollup.rebuild(db)
    assert rollup.differences(db) == []
