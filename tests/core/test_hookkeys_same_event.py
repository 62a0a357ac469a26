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


def test_values_of_another_json_type_are_another_event() -> None:
    # Python's == says True == 1 == 1.0: JSON's true, 1 and 1.0 are three values
    stored = b'{"hook_event_name":"Stop","session_id":"s","stop_hook_active":true,"n":1,"l":[1,{"a":false}]}'
    for other in (
        b'{"hook_event_name":"Stop","session_id":"s","stop_hook_active":1,"n":1,"l":[1,{"a":false}]}',
        b'{"hook_event_name":"Stop","session_id":"s","stop_hook_active":true,"n":1.0,"l":[1,{"a":false}]}',
        b'{"hook_event_name":"Stop","session_id":"s","stop_hook_active":true,"n":1,"l":[1,{"a":0}]}',
        b'{"hook_event_name":"Stop","session_id":"s","stop_hook_active":true,"n":1,"l":[true,{"a":false}]}',
    ):
        assert not hookkeys.same_event(stored, other, _event(other))
    again = b'{"l":[1,{"a":false}],"n":1,"stop_hook_active":true,"session_id":"s","hook_event_name":"Stop"}'
    assert hookkeys.same_event(stored, again, _event(again))


def test_a_deeply_nested_retry_is_compared_without_recursion() -> None:
    deep = b'{"hook_event_name":"Stop","session_id":"s","x":' + b"[" * 1000 + b"]" * 1000 + b"}"
    again = deep.replace(b'"x":', b'"x" :')
    assert hookkeys.same_event(deep, again, _event(again))
