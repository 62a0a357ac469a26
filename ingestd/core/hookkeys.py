"""Hook deliveries: is a body an event, and which idempotency key does it get (SPEC §3). Pure.

A delivery is an event when its body is a JSON object with a string ``hook_event_name``
and a string ``session_id`` (every Claude Code hook input has both, back to 1.0.48:
FORMATS.md §7.1). Anything else is a ``Rejected`` value with a reason, never an exception.

The idempotency key decides which deliveries are "the same event" (a redelivery inserts
nothing). The rules, first match wins:

1. ``Idempotency-Key`` header present: ``h:k:<blake2b-16(header)>``. The client says so:
   the same key is the same event, so a retry inserts nothing. A different event under a used
   key is not a retry (``same_event``): the receiver answers 409 rather than drop it silently.
2. A tool event (``PreToolUse``, ``PostToolUse``, ``PostToolUseFailure``, ``PermissionDenied``)
   with a string ``tool_use_id``: ``h:t:<blake2b-16(session_id, tool_use_id, event)>``. Claude
   Code fires each of these at most once per tool use, so a second copy is a redelivery.
   ``PermissionRequest`` carries no ``tool_use_id`` (FORMATS.md §7.2) and falls to rule 4.
3. ``SubagentStart`` / ``SubagentStop`` with a string ``agent_id``:
   ``h:a:<blake2b-16(session_id, agent_id, event)>``: each subagent starts and stops once.
   Before 2.0.42 SubagentStop carried no ``agent_id`` (corpus: 1.0.89, 2.0.37): rule 4.
4. Everything else (Stop, Notification, UserPromptSubmit, PermissionRequest, SessionStart,
   unknown events, tool events without ``tool_use_id``): a receipt-unique key
   ``h:r:<received_at ns, 16 hex>:<instance>:<counter, 8 hex>``. These events have no natural
   identity (a Stop body can be byte-identical across turns in older versions), so two
   genuine firings must never collapse. The key is time-ordered, so the UNIQUE index
   appends sequentially. ``instance`` distinguishes daemon runs started within the same ns.
"""

from __future__ import annotations

from dataclasses import dataclass
from hashlib import blake2b
from typing import Any

from ingestd.core.decode import (
    MAX_BODY_DECODED_BYTES,
    MAX_INT_DIGITS,
    NUMBER_TOO_LARGE,
    TOO_DEEP,
    TOO_WIDE,
    decode_line,
)

TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied"})
SUBAGENT_EVENTS = frozenset({"SubagentStart", "SubagentStop"})
MAX_HEADER_KEY_CHARS = 200


@dataclass(frozen=True, slots=True)
class HookEvent:
    """One delivery that is an event.

    Attributes:
        event_name: str, the body's ``hook_event_name`` (any name, verbatim).
        session_id: str, the body's ``session_id``.
        tool_use_id: str | None, the body's ``tool_use_id`` when a string.
        agent_id: str | None, the body's ``agent_id`` when a string (subagent context).
        body: dict, the decoded object (unknown keys kept; the log stores the raw bytes).
    """

    event_name: str
    session_id: str
    tool_use_id: str | None
    agent_id: str | None
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rejected:
    """A delivery that cannot be an event.

    Attributes:
        reason: str, a stable machine-readable code (``empty_body``, ``invalid_json``,
            ``not_an_object``, ``missing_hook_event_name``, ``missing_session_id``,
            ``bad_idempotency_key``).
        detail: str, one human sentence.
    """

    reason: str
    detail: str


def parse_body(body: bytes, marks: int | None = None) -> HookEvent | Rejected:
    """Decide whether ``body`` (the request bytes) is a hook event.

    ``marks``: ``decode.value_marks(body)`` when the caller counted it already (its budget charge).

    Returns:
        ``HookEvent`` or ``Rejected`` with the reason; never raises.
    """
    if not body.strip():
        return Rejected("empty_body", "the request body is empty; expected a hook input JSON object")
    # Lenient like transcript lines: real payloads carry lone surrogate escapes
    # (corpus/hooks/ice-hockey-game/Stop.jsonl, truncated emoji); the log keeps the bytes. Within a
    # body's memory budget: too many values, or too long for the lenient pass, is `body_too_wide`.
    decoded = decode_line(body, MAX_BODY_DECODED_BYTES, marks)
    if decoded.reason == TOO_WIDE:
        return Rejected(
            "body_too_wide",
            f"the body holds too many JSON values: decoding it could take over {MAX_BODY_DECODED_BYTES >> 20} MiB",
        )
    if decoded.reason == TOO_DEEP:
        return Rejected(TOO_DEEP, "the body nests deeper than the decoder takes apart (1024 levels, orjson's limit)")
    if decoded.reason == NUMBER_TOO_LARGE:
        return Rejected(NUMBER_TOO_LARGE, f"the body holds an integer of more than {MAX_INT_DIGITS} digits")
    if decoded.reason == "not_json" or decoded.nonfinite:  # NaN / Infinity: not JSON (RFC 8259 §6)
        return Rejected("invalid_json", "the request body is not valid JSON")
    doc = decoded.obj
    if doc is None:
        return Rejected("not_an_object", "expected a JSON object (not an array, string, number or null)")
    name = doc.get("hook_event_name")
    if not isinstance(name, str) or not name:
        return Rejected("missing_hook_event_name", "the object has no string `hook_event_name`")
    sid = doc.get("session_id")
    if not isinstance(sid, str) or not sid or sid.isspace():  # blank: no identity (as in a transcript)
        return Rejected("missing_session_id", "the object has no string `session_id` (or only white space)")
    tuid = doc.get("tool_use_id")
    aid = doc.get("agent_id")
    return HookEvent(
        event_name=name,
        session_id=sid,
        tool_use_id=tuid if isinstance(tuid, str) and tuid else None,
        agent_id=aid if isinstance(aid, str) and aid else None,
        body=doc,
    )


def check_header_key(value: str | None) -> Rejected | None:
    """A usable ``Idempotency-Key`` header is 1..200 printable characters, or absent."""
    if value is None:
        return None
    if not value or len(value) > MAX_HEADER_KEY_CHARS or not value.isprintable():
        return Rejected("bad_idempotency_key", "Idempotency-Key must be 1-200 printable characters")
    return None


def _h(*parts: str) -> str:
    return blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def receipt_key(received_ns: int, instance: str, counter: int) -> str:
    """The receipt-unique key (rule 4): time-ordered, unique per (instance, counter)."""
    return f"h:r:{received_ns:016x}:{instance}:{counter:08x}"


def idempotency_key(event: HookEvent, *, header_key: str | None, received_ns: int, instance: str, counter: int) -> str:
    """The idempotency key of a delivery (rules 1-4 of the module docstring).

    Args:
        event: the parsed delivery.
        header_key: the ``Idempotency-Key`` header, or None.
        received_ns: int, receipt time in ns since the epoch (rule 4 only).
        instance: short id of this daemon run (rule 4 only).
        counter: int, per-instance delivery counter (rule 4 only).
    """
    if header_key is not None:
        return f"h:k:{_h(header_key)}"
    if event.tool_use_id is not None and event.event_name in TOOL_EVENTS:
        return f"h:t:{_h(event.session_id, event.tool_use_id, event.event_name)}"
    if event.agent_id is not None and event.event_name in SUBAGENT_EVENTS:
        return f"h:a:{_h(event.session_id, event.agent_id, event.event_name)}"
    return receipt_key(received_ns, instance, counter)


def same_event(stored: bytes, body: bytes, event: HookEvent) -> bool:
    """Whether ``body`` (parsed as ``event``) is the event ``stored`` under its client key (rule 1):
    the same bytes, or the same JSON object written otherwise (spacing, key order) by a client that
    serialises again on retry.

    Args:
        stored: bytes, the payload logged under the key.
        body: bytes, the new delivery's body; event: its ``parse_body`` result.
    """
    if stored == body:
        return True
    again = decode_line(stored, MAX_BODY_DECODED_BYTES)
    return again.obj is not None and same_json(again.obj, event.body)


def same_json(a: Any, b: Any) -> bool:
    """Whether two decoded JSON values are the same value of the same JSON type at every level:
    ``true`` is not ``1`` and ``1`` is not ``1.0`` (Python's ``==`` says they are). Iterative: a
    body nested as deep as orjson decodes (1024) would overflow Python's recursion limit."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((v, y[k]) for k, v in x.items())
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True
