"""The pure half of the hook receiver: is a body an event, and its idempotency key."""

from __future__ import annotations

import orjson
import pytest

from ingestd.core import hookkeys
from ingestd.core.hookkeys import HookEvent, Rejected, idempotency_key, parse_body


def _ev(**body: object) -> HookEvent:
    got = parse_body(orjson.dumps(body))
    assert isinstance(got, HookEvent)
    return got


def _key(ev: HookEvent, header: str | None = None, ns: int = 1, counter: int = 0) -> str:
    return idempotency_key(ev, header_key=header, received_ns=ns, instance="abcd0123", counter=counter)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "empty_body"),
        (b"   \n", "empty_body"),
        (b"{not json", "invalid_json"),
        (b"\xff\xfe", "invalid_json"),
        (b"[1, 2]", "not_an_object"),
        (b'"Stop"', "not_an_object"),
        (b"null", "not_an_object"),
        (b'{"session_id": "s"}', "missing_hook_event_name"),
        (b'{"hook_event_name": 3, "session_id": "s"}', "missing_hook_event_name"),
        (b'{"hook_event_name": "", "session_id": "s"}', "missing_hook_event_name"),
        (b'{"hook_event_name": "Stop"}', "missing_session_id"),
        (b'{"hook_event_name": "Stop", "session_id": null}', "missing_session_id"),
    ],
)
def test_bodies_that_cannot_be_events_are_rejected_with_a_reason(body: bytes, reason: str) -> None:
    got = parse_body(body)
    assert isinstance(got, Rejected)
    assert got.reason == reason
    assert got.detail


def test_any_event_name_and_unknown_keys_are_kept() -> None:
    ev = _ev(hook_event_name="FutureEvent", session_id="s", novel={"x": [1]})
    assert ev.event_name == "FutureEvent"
    assert ev.body["novel"] == {"x": [1]}


def test_header_key_wins_and_is_stable() -> None:
    a = _ev(hook_event_name="Stop", session_id="s")
    b = _ev(hook_event_name="Notification", session_id="t")
    assert _key(a, "k1", ns=1) == _key(b, "k1", ns=2, counter=9)
    assert _key(a, "k1") != _key(a, "k2")
    assert _key(a, "k1").startswith("h:k:")


def test_tool_events_are_identified_by_session_tool_use_event_and_body() -> None:
    pre = _ev(hook_event_name="PreToolUse", session_id="s", tool_use_id="toolu_1", tool_input={"a": 1})
    pre_again = _ev(hook_event_name="PreToolUse", session_id="s", tool_use_id="toolu_1", tool_input={"a": 1})
    pre_other_input = _ev(hook_event_name="PreToolUse", session_id="s", tool_use_id="toolu_1", tool_input={"a": 2})
    post = _ev(hook_event_name="PostToolUse", session_id="s", tool_use_id="toolu_1")
    other_session = _ev(hook_event_name="PreToolUse", session_id="s2", tool_use_id="toolu_1")
    assert _key(pre, ns=1) == _key(pre_again, ns=2, counter=5)  # the same bytes again: one row
    assert len({_key(pre), _key(pre_other_input), _key(post), _key(other_session)}) == 4
    assert _key(pre).startswith("h:t:")


def test_subagent_events_are_identified_by_session_agent_event_and_body() -> None:
    start = _ev(hook_event_name="SubagentStart", session_id="s", agent_id="a1")
    stop = _ev(hook_event_name="SubagentStop", session_id="s", agent_id="a1", stop_hook_active=False)
    refired = _ev(hook_event_name="SubagentStop", session_id="s", agent_id="a1", stop_hook_active=True)
    assert _key(start, ns=1) == _key(start, ns=2, counter=3)
    assert len({_key(start), _key(stop), _key(refired)}) == 3
    assert _key(stop).startswith("h:a:")


def test_a_tool_batch_is_identified_by_its_calls_and_body() -> None:
    calls = [{"tool_use_id": "toolu_1", "tool_name": "Bash"}, {"tool_use_id": "toolu_2", "tool_name": "Read"}]
    batch = _ev(hook_event_name="PostToolBatch", session_id="s", tool_calls=calls)
    assert _key(batch, ns=1) == _key(batch, ns=2, counter=3)
    assert _key(batch).startswith("h:b:")
    one_call = _ev(hook_event_name="PostToolBatch", session_id="s", tool_calls=calls[:1])
    no_ids = _ev(hook_event_name="PostToolBatch", session_id="s", tool_calls=[{"tool_name": "Bash"}])
    assert _key(one_call) != _key(batch)
    assert _key(no_ids, counter=0) != _key(no_ids, counter=1)  # no identity: never collapses


@pytest.mark.parametrize(
    "body",
    [
        {"hook_event_name": "Stop", "session_id": "s", "stop_hook_active": False},
        {"hook_event_name": "Notification", "session_id": "s", "message": "m"},
        {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "p"},
        {"hook_event_name": "PermissionRequest", "session_id": "s", "tool_name": "Bash"},
        {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash"},  # pre-2.1.42: no id
        {"hook_event_name": "SubagentStop", "session_id": "s", "stop_hook_active": False},  # pre-2.0.42
        {"hook_event_name": "Stop", "session_id": "s", "agent_id": "a1"},
        {"hook_event_name": "Notification", "session_id": "s", "tool_use_id": "t"},
        {"hook_event_name": "TaskCompleted", "session_id": "s", "task_id": "1", "task_subject": "x"},
        {"hook_event_name": "CwdChanged", "session_id": "s", "old_cwd": "/a", "new_cwd": "/b"},
        {"hook_event_name": "PostModelSwitch", "session_id": "s", "to_model": "m", "source": "sdk"},
    ],
)
def test_events_without_natural_identity_never_collapse(body: dict[str, object]) -> None:
    ev = _ev(**body)
    first = _key(ev, ns=1000, counter=0)
    second = _key(ev, ns=1000, counter=1)
    assert first != second
    assert first.startswith("h:r:")


def test_receipt_keys_are_time_ordered() -> None:
    keys = [hookkeys.receipt_key(ns, "abcd0123", c) for ns, c in [(5, 0), (10, 1), (10, 2), (1 << 62, 3)]]
    assert keys == sorted(keys)


@pytest.mark.parametrize("value", ["", "x" * 201, "bad\nkey"])
def test_unusable_header_keys_are_rejected(value: str) -> None:
    got = hookkeys.check_header_key(value)
    assert isinstance(got, Rejected)
    assert got.reason == "bad_idempotency_key"


def test_absent_or_good_header_key_passes() -> None:
    assert hookkeys.check_header_key(None) is None
    assert hookkeys.check_header_key("retry-123") is None
