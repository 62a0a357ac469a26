"""``hookkeys.same_event``: which deliveries under one client key are retries (SPEC §3)."""

from __future__ import annotations

from ingestd.core import hookkeys


def _event(body: bytes) -> hookkeys.HookEvent:
    parsed = hookkeys.parse_body(body)
    assert isinstance(parsed, hookkeys.HookEvent)
    return parsed


def test_same_bytes_or_same_object_is_the_same_event() -> None:
    stored = b'{"hook_event_name":"Stop","session_id":"s2"}'
    for again in (stored, b'{ "session_id":"s2", "hook_event_name":"Stop" }\n'):
        assert hookkeys.same_event(stored, again, _event(again))


def test_another_object_is_another_event() -> None:
    stored = b'{"hook_event_name":"Stop","session_id":"s2"}'
    for other in (
        b'{"hook_event_name":"Notification","session_id":"s3","message":"x"}',
        b'{"hook_event_name":"Stop","session_id":"s2","extra":1}',
    ):
        assert not hookkeys.same_event(stored, other, _event(other))
    # a stored payload that is not an object (never from the receiver) is never the same
    other = b'{"hook_event_name":"Stop","session_id":"s2"}'
    assert not hookkeys.same_event(b"[1]", other, _event(other))
