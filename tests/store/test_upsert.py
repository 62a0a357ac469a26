"""The named rows (``ingestd.core.rows``) are the tables' columns: the upserts built from them
write every row back unchanged, and a second write changes nothing."""

from __future__ import annotations

import apsw
import pytest

from ingestd.core import rows
from ingestd.core.projector import fold_log
from ingestd.core.touch import Ctx
from ingestd.store.connection import write_txn
from ingestd.store.upsert import UPSERT_TOKENS, write_changes
from tests.core.projector_support import by_session, tree_rows

TABLES = {
    "sessions": rows.SessionRow,
    "agents": rows.AgentRow,
    "orchestration_edges": rows.EdgeRow,
    "token_usage": rows.TokenUsageRow,
    "tool_calls": rows.ToolCallRow,
    "compactions": rows.CompactionRow,
    "events": rows.EventRow,
    "quarantine": rows.QuarantineRow,
    "summaries": rows.SummaryRow,
    "ingest_checkpoints": rows.Checkpoint,
}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_field_is_a_column_and_every_required_column_a_field(db: apsw.Connection, table: str) -> None:
    info = list(db.execute(f"PRAGMA table_info({table})"))
    columns = {str(r[1]) for r in info}
    required = {str(r[1]) for r in info if r[3] and r[4] is None and not r[5]}  # NOT NULL, no default, not pk
    fields = set(TABLES[table]._fields)
    assert fields <= columns
    assert required - {"evidence_status"} <= fields  # evidence_status is bound from `status`


def test_the_fixture_rows_read_back_as_written(db: apsw.Connection) -> None:
    ch = None
    for sid, session_rows in sorted(by_session(tree_rows()).items()):
        _, got = fold_log(sid, session_rows, Ctx("i", "h"))
        if ch is None:
            ch = got
        else:
            ch.extend(got)
    assert ch is not None and ch.agents and ch.token_usage and ch.tool_calls
    write_txn(db, lambda c: write_changes(c, ch))
    for table, attr in (("agents", "agents"), ("orchestration_edges", "edges"), ("tool_calls", "tool_calls")):
        cls = TABLES[table]
        stored = {cls(*r) for r in db.execute(f"SELECT {', '.join(cls._fields)} FROM {table}")}
        assert stored == set(getattr(ch, attr)), table
    # token_usage keeps one claim per (message, bucket) across sessions: each stored row is one emitted
    token_sql = f"SELECT {', '.join(rows.TokenUsageRow._fields[1:])} FROM token_usage ORDER BY message_id, bucket"
    tokens = list(db.execute(token_sql))
    assert set(tokens) <= {r[1:] for r in ch.token_usage}
    assert len(tokens) == len({(r.message_id, r.bucket) for r in ch.token_usage})
    write_txn(db, lambda c: write_changes(c, ch))  # writing the same rows again changes nothing
    assert list(db.execute(token_sql)) == tokens
    # and does not even rewrite them: the upsert's "unchanged rows are not rewritten" clause
    before = db.total_changes()
    write_txn(db, lambda c: c.executemany(UPSERT_TOKENS, ch.token_usage))
    assert db.total_changes() == before
