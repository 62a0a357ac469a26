"""A background agent's end is its ``<task-notification>`` in any of its forms (SPEC §4.2;
``ingestd.core.blocks.notice``), on the rows a real Claude Code 2.1.332 wrote for one (the
``spawn`` scenario: ``tests/core/async_support.py``)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import orjson
import pytest

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core import async_support as a
from tests.core.claude_fixtures import at
from tests.core.projector_support import Model, hook_row


def project(rows: list[LogRow]) -> Model:
    m = Model()
    m.apply(fold_log(a.SID, rows, Ctx())[1])
    return m


def _launch_only() -> list[LogRow]:
    """The spawn (PreToolUse), its async launch (PostToolUse, the transcript's tool_result): nothing of the end."""
    hooks = [r for r in a.hooks() if r.event_type in ("PreToolUse", "PostToolUse") and b"Agent" in r.payload]
    return [*hooks, a.line(100, a.records()[0])]


def _ups_notice() -> LogRow:
    body = next(
        b for b in a.deliveries("spawn") if b["hook_event_name"] == "UserPromptSubmit" and "<task-id>" in b["prompt"]
    )
    return LogRow(200, "hook", "UserPromptSubmit", orjson.dumps(body), at(300), a.SID, "hook")


def _forms() -> dict[str, LogRow]:
    _, queued, delivered = a.records()
    return {"queue": a.line(101, queued), "user": a.line(102, delivered), "hook": _ups_notice()}


def test_an_async_launch_is_no_end() -> None:
    m = project(_launch_only())
    row = m.agent(a.CHILD)
    assert row.status == "working" and row.parent_agent_id == a.SID
    assert m.tables["edges"][(a.SID, a.CHILD)].source == "tool_use"
    # and once the session ends with nothing else, the agent did not finish
    end = hook_row(a.SID, 300, "SessionEnd", at(900), reason="other")
    assert project([*_launch_only(), end]).agent(a.CHILD)[4:9:4] == ("error", "terminated_early")


def test_a_launch_result_read_without_its_tool_use_result_is_no_end() -> None:
    """A copy of the record without ``toolUseResult``: its text still says it was a launch."""
    rec = {k: v for k, v in a.records()[0].items() if k != "toolUseResult"}
    hooks = [r for r in _launch_only() if r.source == "hook"]
    m = project([*hooks, a.line(100, rec)])
    assert m.agent(a.CHILD).status == "working"


@pytest.mark.parametrize("form", ["queue", "user", "hook"])
def test_each_form_of_the_notice_completes_the_agent(form: str) -> None:
    m = project([*_launch_only(), _forms()[form]])
    assert m.agent(a.CHILD).status == "completed"
    assert m.agent(a.CHILD).outcome_cause is None


@pytest.mark.parametrize("form", ["queue", "user", "hook"])
def test_a_notice_without_a_tool_use_id_completes_the_agent_its_task_id_names(form: str) -> None:
    row = _forms()[form]
    obj = orjson.loads(row.payload)
    key = {"queue": ("content",), "user": ("message", "content"), "hook": ("prompt",)}[form]
    target = obj
    for k in key[:-1]:
        target = target[k]
    target[key[-1]] = a.without_tag(target[key[-1]], "tool-use-id")
    assert "<tool-use-id>" not in orjson.dumps(obj).decode()
    older = dataclasses.replace(row, payload=orjson.dumps(obj))
    sub = hook_row(a.SID, 50, "SubagentStart", at(5), agent_id=a.CHILD, agent_type="general-purpose")
    m = project([sub, older])
    assert m.agent(a.CHILD).status == "completed"
    assert m.tables["edges"] == {}  # nothing names the spawn


def test_a_failed_notice_is_an_error_and_the_newest_notice_wins() -> None:
    _, queued, _ = a.records()
    failed = {**queued, "content": queued["content"].replace("<status>completed", "<status>failed")}
    failed_later = {**failed, "timestamp": "2026-12-01T23:59:00.000Z"}
    assert project([*_launch_only(), a.line(101, failed)]).agent(a.CHILD).status == "error"
    # a resumed agent notifies again: the newest notice is its state, whatever order they are read in
    for rows in itertools.permutations([a.line(101, queued), a.line(102, failed_later)]):
        assert project([*_launch_only(), *rows]).agent(a.CHILD).status == "error"


def test_a_notice_matching_no_agent_creates_none() -> None:
    forms = _forms()
    m = project(list(forms.values()))
    assert m.tables["agents"].keys() == {(a.SID, a.SID)}  # the main agent only (the notice's turn)
    assert m.tables["edges"] == {}


def test_the_notice_usage_is_never_billed() -> None:
    m = project([*_launch_only(), *_forms().values()])
    assert m.tables["tokens"] == {}


def _tables(rows: list[LogRow]) -> dict[str, Any]:
    return project(rows).tables


def test_every_order_of_the_real_rows_gives_the_same_rows() -> None:
    rows = a.session()
    want = _tables(rows)
    assert project(rows).agent(a.CHILD).status == "completed"
    for perm in (list(reversed(rows)), rows[len(rows) // 2 :] + rows[: len(rows) // 2]):
        assert _tables(perm) == want
