"""Hook deliveries: is a body an event, and which idempotency key does it get (SPEC §3). Pure.

A delivery is an event when its body is a JSON object with a string ``hook_event_name``
and a string ``session_id`` (every Claude Code hook input has both, back to 1.0.48:
FORMATS.md §7.1). Anything else is a ``Rejected`` value with a reason, never an exception.

The idempotency key decides which deliveries are "the same event" (a redelivery inserts
nothing). It never collapses two deliveries whose bodies differ in any byte: natural ids narrow a
key, they never replace the body in it (SPEC §3). The rules, first match wins:

1. ``Idempotency-Key`` header present: ``h:k:<blake2b-16(header)>``. The client says so:
   the same key is the same event, so a retry inserts nothing. A different event under a used
   key is not a retry (``same_event``): the receiver answers 409 rather than drop it silently.
2. An event with a natural identity (``IDENTITY``), keyed by that identity *and* the body's bytes:
   ``h:<kind>:<blake2b-16(session_id, event, identity, blake2b-16(body))>``. The same bytes
   delivered twice (a hook in settings and in a plugin, a retry) are one row; any other body is
   another row. Claude Code 2.1.332 fires each of these once per identity, except SubagentStop,
   fired again for the same agent when a Stop / SubagentStop hook blocks, with another body
   (``stop_hook_active``, ``last_assistant_message``): two rows.

   - ``t``: a tool event (``PreToolUse``, ``PostToolUse``, ``PostToolUseFailure``,
     ``PermissionDenied``, ``PreSkillShellCommand``) with a string ``tool_use_id``, unique per tool
     use (PreSkillShellCommand's is ``<uuid>:inner:preamble-N``, one per inline command run).
     ``PermissionRequest`` carries no ``tool_use_id`` (FORMATS.md §7.2; 2.1.332 neither): rule 3.
   - ``a``: ``SubagentStart`` / ``SubagentStop`` with a string ``agent_id``. Before 2.0.42
     SubagentStop carried no ``agent_id`` (corpus: 1.0.89, 2.0.37): rule 3.
   - ``b``: ``PostToolBatch`` whose ``tool_calls`` all carry a string ``tool_use_id`` (once per
     batch: its calls' ids, in order, are its identity).
3. Everything else (Stop, Notification, UserPromptSubmit, PermissionRequest, SessionStart, task,
   file, config and model-switch events, unknown events, the events of rule 2 without their ids):
   a receipt-unique key ``h:r:<received_at ns, 16 hex>:<instance>:<counter, 8 hex>``. These have no
   natural identity: a Stop body can be byte-identical across turns in older versions, and a
   TaskCompleted, CwdChanged or ConfigChange can fire twice with the same body, so two genuine
   firings must never collapse, even at the price of logging a settings-plus-plugin double twice
   (the fold is a join: the projections do not change). The key is time-ordered, so the UNIQUE
   index appends sequentially. ``instance`` distinguishes daemon runs started within the same ns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied", "PreSkillShellCommand"})
SUBAGENT_EVENTS = frozenset({"SubagentStart", "SubagentStop"})
BATCH_EVENTS = frozenset({"PostToolBatch"})
# The events keyed by a natural identity and their body (rule 2), by key kind.
IDENTITY = {"t": TOOL_EVENTS, "a": SUBAGENT_EVENTS, "b": BATCH_EVENTS}
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
        raw: bytes, the body exactly as received (the key of rule 2 hashes it).
    """

    event_name: str
    session_id: str
    tool_use_id: str | None
    agent_id: str | None
    body: dict[str, Any]
    raw: bytes = field(default=b"", repr=False, compare=False)


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
        raw=body,
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
    """The idempotency key of a delivery (rules 1-3 of the module docstring).

    Args:
        event: the parsed delivery (its ``raw`` bytes are part of a rule-2 key).
        header_key: the ``Idempotency-Key`` header, or None.
        received_ns: int, receipt time in ns since the epoch (rule 3 only).
        instance: short id of this daemon run (rule 3 only).
        counter: int, per-instance delivery counter (rule 3 only).
    """
    if header_key is not None:
        return f"h:k:{_h(header_key)}"
    found = identity(event)
    if found is not None:
        kind, ident = found
        body = blake2b(event.raw, digest_size=16).hexdigest()
        return f"h:{kind}:{_h(event.session_id, event.event_name, ident, body)}"
    return receipt_key(received_ns, instance, counter)


def identity(event: HookEvent) -> tuple[str, str] | None:
    """``(key kind, natural identity)`` of an event keyed by rule 2, None for rule 3."""
    name = event.event_name
    if name in TOOL_EVENTS and event.tool_use_id is not None:
        return "t", event.tool_use_id
    if name in SUBAGENT_EVENTS and event.agent_id is not None:
        return "a", event.agent_id
    if name in BATCH_EVENTS:
        calls = event.body.get("tool_calls")
        if isinstance(calls, list) and calls:
            ids = [c.get("tool_use_id") if isinstance(c, dict) else None for c in calls]
            if all(isinstance(i, str) and i for i in ids):
                return "b", "\x00".join(str(i) for i in ids)
    return None


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
