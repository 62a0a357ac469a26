"""Projection upserts: the named rows (``ingestd.core.rows``) are each store's columns, the rows a
projector emits read back as written, and writing them again changes nothing."""

from __future__ import annotations

import pytest

from ingestd.core import rows
from ingestd.core.derive import Changes
from ingestd.core.projector import fold_log
from ingestd.core.touch import Ctx
from tests.core import async_support
from tests.core.claude_fixtures import deliveries, hook_rows
from tests.core.projector_support import by_session, tree_rows
from tests.statusline.documented import NOW, SESSION, documented, log_row
from tests.stores.stores import HOST, Store

TABLES = {
    "sessions": rows.SessionRow,
    "agents": rows.AgentRow,
    "orchestration_edges": rows.EdgeRow,
    "token_usage": rows.TokenUsageRow,
    "tool_calls": rows.ToolCallRow,
    "compactions": rows.CompactionRow,
    "tasks": rows.TaskRow,
    "prompts": rows.PromptRow,
    "cc_model_usage": rows.CcModelUsageRow,
    "events": rows.EventRow,
    "rate_limit_samples": rows.RateLimitSampleRow,
    "quarantine": rows.QuarantineRow,
    "summaries": rows.SummaryRow,
}
# Bound from another field, not a field of their own: agents.evidence_status from status; the
# central store's host_id is the host whose slice wrote the row.
BOUND = {"evidence_status", "host_id"}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_field_is_a_column_and_every_required_column_a_field(store: Store, table: str) -> None:
    columns, required = store.columns(table)
    fields = set(TABLES[table]._fields)
    assert fields <= columns
    assert required - BOUND <= fields


def _fixture_changes() -> dict[str, Changes]:
    """The fixture tree's projection rows, per session."""
    return {sid: fold_log(sid, r, Ctx("i", HOST))[1] for sid, r in sorted(by_session(tree_rows()).items())}


def test_the_fixture_rows_read_back_as_written_and_a_second_write_changes_nothing(store: Store) -> None:
    per_session = _fixture_changes()
    for sid, ch in per_session.items():
        store.write(ch, sid=sid)
    every = Changes()
    for ch in per_session.values():
        every.extend(ch)
    assert every.agents and every.edges and every.token_usage and every.tool_calls and every.summaries
    for table, attr in (
        ("agents", "agents"),
        ("orchestration_edges", "edges"),
        ("tool_calls", "tool_calls"),
        ("compactions", "compactions"),
        ("events", "events"),
        ("quarantine", "quarantine"),
    ):
        cls = TABLES[table]
        stored = {cls(*r) for r in store.rows(f"SELECT {', '.join(cls._fields)} FROM {table}")}
        assert stored == set(getattr(every, attr)), table
    # token_usage keeps one claim per message across sessions: each stored row is one emitted
    token_sql = f"SELECT {', '.join(rows.TokenUsageRow._fields[1:])} FROM token_usage ORDER BY message_id"
    tokens = store.rows(token_sql)
    assert set(tokens) <= {r[1:] for r in every.token_usage}
    assert len(tokens) == len({r.message_id for r in every.token_usage})
    before = {t: store.rows(f"SELECT * FROM {t} ORDER BY 1, 2") for t in TABLES}

    def again() -> None:
        for sid, ch in per_session.items():
            store.write(ch, sid=sid)

    # and the usage rows are not even rewritten (the upsert leaves a row whose values are equal)
    assert store.rewrites("token_usage", again) == 0
    assert {t: store.rows(f"SELECT * FROM {t} ORDER BY 1, 2") for t in TABLES} == before


def test_the_agent_kinds_and_edge_provenances_of_2_1_332_are_stored(store: Store) -> None:
    """A teammate with its name, edges from a sidecar and from a fork (migrations 0020 / pg 0007)."""
    sid = async_support.SID
    ch = fold_log(sid, async_support.session(), Ctx("i", HOST))[1]
    assert {e.source for e in ch.edges} == {"sidecar"}
    mate = rows.AgentRow("mate", sid, "teammate", None, "working", sid, None, None, None, 0, None, "alice")
    ch.agents.append(mate)
    ch.edges.append(rows.EdgeRow(7, sid, "parent-session", sid, "fork", "i", HOST, None, ""))
    # the evidence that keeps it (the local store recomputes fork edges after each write)
    ch.sessions[:] = [s._replace(forked_from="parent-session") for s in ch.sessions]
    store.write(ch, sid=sid)
    got = {r[0]: r[1:] for r in store.rows("SELECT id, type, name FROM agents")}
    assert got["mate"] == ("teammate", "alice")
    assert {r[0] for r in store.rows("SELECT source FROM orchestration_edges")} == {"sidecar", "fork"}


def test_the_hook_projections_of_2_1_332_read_back_as_written(store: Store) -> None:
    """Tasks, a denied call's reason, prompt ids, a failed turn's error type, the model switched to,
    unmatched notices and a compaction's summary (migrations 0023 / pg 0009), in both stores."""
    bodies = deliveries("tasks")
    sid = str(bodies[0]["session_id"])
    pre = next(b for b in bodies if b["hook_event_name"] == "PreToolUse")
    extra = [
        {**pre, "hook_event_name": "PermissionDenied", "reason": "not allowed"},
        {**pre, "hook_event_name": "StopFailure", "error": "overloaded"},
        {**pre, "hook_event_name": "PostModelSwitch", "to_model": "claude-haiku-4-5-20251001"},
        {
            **pre,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "<task-notification><task-id>b9</task-id></task-notification>",
        },
    ]
    ch = fold_log(sid, hook_rows([*bodies[:-1], *extra]), Ctx("i", HOST))[1]
    ch.compactions.append(rows.CompactionRow(sid, "cb", sid, "2026-12-01T00:00:00.000Z", "manual", 10, "Summary."))
    store.write(ch, sid=sid)
    store.write(ch, sid=sid)
    for table, got in (("tasks", ch.tasks), ("tool_calls", ch.tool_calls), ("events", ch.events)):
        cls = TABLES[table]
        assert {cls(*r) for r in store.rows(f"SELECT {', '.join(cls._fields)} FROM {table}")} == set(got), table
    (s,) = store.rows("SELECT error_type, switched_to_model, unmatched_notices FROM sessions")
    assert s == ("overloaded", "claude-haiku-4-5-20251001", 1)
    assert store.rows("SELECT status, reason FROM tool_calls WHERE reason IS NOT NULL") == [("denied", "not allowed")]
    assert store.rows("SELECT summary FROM compactions") == [("Summary.",)]
    assert {r.status for r in ch.tasks} == {"completed"}


def test_status_line_samples_read_back_as_written(store: Store) -> None:
    docs = [documented(NOW), documented(NOW + 60, rate_limits={"five_hour": {"used_percentage": None}})]
    _, ch = fold_log(SESSION, [log_row(d, i + 1) for i, d in enumerate(docs)], Ctx("i", HOST))
    store.write(ch, sid=SESSION)
    store.write(ch, sid=SESSION)
    cls = rows.RateLimitSampleRow
    stored = store.rows(f"SELECT {', '.join(cls._fields)} FROM rate_limit_samples ORDER BY raw_event_id")
    assert [cls(*r) for r in stored] == sorted(ch.rate_limit_samples)
    assert [r.five_hour_flag for r in sorted(ch.rate_limit_samples)] == [None, "null"]
