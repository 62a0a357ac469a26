"""Oversized marker rows: what is logged of a line longer than ``max_line_bytes`` (SPEC §12). Pure.

A line past the cap is never held in memory whole (``ingestd.core.framing.Oversized``): the
log gets one ``oversized`` row whose payload is a JSON object

``{"oversized": {"length": int, "blake2b": hex, "head": base64, "tail": base64}}``

(the first 4 KiB and the last 64 KiB of the line). The projector takes what it can from
those bytes (``salvage``): the record's ``type``, ``sessionId``, ``uuid``, ``timestamp``,
``agentId`` / ``isSidechain``, and for an assistant record the message's ``id``, ``model``
and ``usage``. Claude Code writes a record's keys in a fixed order (FORMATS.md §1): the
envelope and the start of ``message`` (``id``, ``model``) come first, the bulky ``content``
in the middle, then ``usage``, ``type``, ``uuid`` and ``timestamp`` at the end, so a billed
message whose content is megabytes still counts; a record whose ``message`` (usage included) comes
before a bulky field of its own has its usage in the head, where it is looked for next. Keys
are found as raw JSON text (a quoted key followed by ``:``); a key inside a nested JSON *string*
is escaped (``\\"id\\"``) and never matches.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import orjson

from ingestd.core.decode import repaired
from ingestd.core.framing import HEAD_BYTES, TAIL_BYTES, Oversized

OVERSIZED = "oversized"  # the marker row's event_type

RECORD_TYPES = ("assistant", "user", "system", "progress", "attachment", "summary")
_STR = rb'"((?:[^"\\]|\\.){1,512})"'
_KEYS = {k: re.compile(rb'"' + k.encode() + rb'"\s*:\s*' + _STR) for k in ("sessionId", "uuid", "timestamp", "agentId")}
_TYPE = re.compile(rb'"type"\s*:\s*"(' + "|".join(RECORD_TYPES).encode() + rb')"')
_ROLE = re.compile(rb'"role"\s*:\s*"(assistant|user)"')
_MSG_ID = re.compile(rb'"message"\s*:\s*\{\s*(?:"model"\s*:\s*' + _STR + rb"\s*,\s*)?" + rb'"id"\s*:\s*' + _STR)
_MODEL = re.compile(rb'"model"\s*:\s*' + _STR)
_SIDECHAIN = re.compile(rb'"isSidechain"\s*:\s*(true|false)')
_USAGE = re.compile(rb'"usage"\s*:\s*\{')


def marker_payload(ov: Oversized) -> bytes:
    """The ``oversized`` row's payload for an oversized line (see module docstring); a line under
    the cap but too wide to decode (``Oversized.reason`` ``values``) says so in ``"reason"``."""
    marker: dict[str, object] = {
        "length": ov.length,
        "blake2b": ov.digest,
        "head": base64.b64encode(ov.head).decode("ascii"),
        "tail": base64.b64encode(ov.tail).decode("ascii"),
    }
    if ov.reason != "length":
        marker["reason"] = ov.reason
    return orjson.dumps({"oversized": marker})


def _text(raw: bytes) -> str | None:
    try:
        v = json.loads(b'"' + raw + b'"')
    except ValueError:
        return None
    return v if isinstance(v, str) else None


def _first(rx: re.Pattern[bytes], *bufs: bytes) -> str | None:
    for b in bufs:
        m = rx.search(b)
        if m:
            return _text(m.group(1))
    return None


def _last(rx: re.Pattern[bytes], buf: bytes) -> str | None:
    found = None
    for m in rx.finditer(buf):
        found = m.group(1)
    return None if found is None else _text(found)


def _usage(buf: bytes, *, last: bool = True) -> dict[str, Any] | None:
    """The last (else the first) ``"usage": {...}`` object of ``buf`` that parses whole."""
    starts = [m.end() - 1 for m in _USAGE.finditer(buf)]
    text_dec = json.JSONDecoder()
    for start in reversed(starts) if last else starts:
        try:
            obj, _ = text_dec.raw_decode(buf[start:].decode("utf-8", "replace"))
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


def salvage(payload: bytes) -> dict[str, Any] | None:
    """The record an ``oversized`` payload stands for, as far as its head and tail tell.

    Returns:
        A record object (``type``, ``sessionId``, ``uuid``, ``timestamp``, ``agentId``,
        ``isSidechain``, ``message`` {``id``, ``model``, ``usage``, ``role``} where found),
        or None when the payload is not a marker or no record type can be told.
    """
    try:
        doc = orjson.loads(payload)
        m = doc["oversized"]
        head = base64.b64decode(m["head"])
        tail = base64.b64decode(m["tail"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    return salvage_bytes(head, tail)


def salvage_line(data: bytes) -> dict[str, Any] | None:
    """``salvage`` of a whole line that cannot be decoded (any of ``decode.UNDECODABLE``: too deep, a
    number too large, too wide): its first ``HEAD_BYTES`` and last ``TAIL_BYTES`` read as an oversized
    line's would be."""
    return salvage_bytes(data[:HEAD_BYTES], data[-TAIL_BYTES:])


def salvage_bytes(head: bytes, tail: bytes) -> dict[str, Any] | None:
    """The record a line's ``head`` and ``tail`` bytes tell (see ``salvage``), or None."""
    # the envelope's keys after `message` end the record: the tail's last match is the record's own
    etype = _last(_TYPE, tail) if tail else None
    role = _first(_ROLE, head)
    if etype is None:
        etype = role or _first(_TYPE, head)
    if etype is None:
        return None
    obj: dict[str, Any] = {"type": etype}
    for key in ("sessionId", "agentId"):
        v = _first(_KEYS[key], head, tail)
        if v is not None:
            obj[key] = v
    for key in ("uuid", "timestamp"):
        v = _last(_KEYS[key], tail) or _first(_KEYS[key], head)
        if v is not None:
            obj[key] = v
    sc = _SIDECHAIN.search(head)
    if sc:
        obj["isSidechain"] = sc.group(1) == b"true"
    if etype == "assistant":
        msg: dict[str, Any] = {"role": "assistant"}
        mm = _MSG_ID.search(head)
        if mm:
            mid = _text(mm.group(2))
            if mid is not None:
                msg["id"] = mid
        model = _first(_MODEL, head)
        if model is not None:
            msg["model"] = model
        # usage ends the message as Claude Code writes it (the tail's last); a record whose message
        # comes before a bulky field of its own has it in the head (its first, after the id)
        usage = _usage(tail)
        if usage is None:
            usage = _usage(head[mm.end() :] if mm else head, last=False)
        if usage is not None:
            msg["usage"] = usage
        obj["message"] = msg
    # escapes in the kept bytes can spell lone surrogates ("\\ud83d" cut from a pair): repaired like
    # any leniently decoded line, so every value stays text SQLite can bind
    fixed = repaired(obj)
    return fixed if isinstance(fixed, dict) else None


def usage_lost(rec: dict[str, Any] | None) -> bool:
    """Whether ``salvage``'s record is an assistant message whose usage was in neither the head nor
    the tail (in the middle of the line): its tokens are not counted, so the shell says so."""
    if rec is None or rec.get("type") != "assistant":
        return False
    msg = rec.get("message")
    return not isinstance(msg, dict) or "usage" not in msg
