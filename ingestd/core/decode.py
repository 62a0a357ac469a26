"""Lenient decoding of one transcript line (SPEC §7), pure.

orjson is tried first (the fast path for every well-formed line). When it refuses,
the line is decoded leniently: invalid UTF-8 bytes become U+FFFD and lone surrogate
escapes (FORMATS.md §6: a hook log held ``\\udc9d`` written back escaped; Claude Code
has truncated text mid-character) are replaced, and the line counts as ``recovered``.
A line that still is not a JSON object is ``invalid`` with a reason; the raw bytes
stay in the log either way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Decoded:
    """The decoding of one line.

    Attributes:
        obj: dict | None, the JSON object (None when the line is invalid).
        recovered: bool, the object was obtained only by lenient decoding.
        reason: str | None, why the line is invalid: ``not_json``, ``not_object``, ``too_deep``
            (nested deeper than the decoder takes apart: orjson's limit, 1024 levels, or the lenient
            path's, ``MAX_LENIENT_DEPTH``) or ``number_too_large`` (an integer of more than
            ``MAX_INT_DIGITS`` digits) or ``too_wide`` (decoding it could take more memory than its
            budget: ``too_wide`` counts its values; the lenient pass, ``LENIENT_BYTES_PER_BYTE`` per byte).
        nonfinite: bool, the lenient pass met ``NaN``, ``Infinity`` or ``-Infinity``: not JSON's
            grammar (RFC 8259 §6; orjson refuses them), taken for a transcript line (its sound
            parts count, SPEC §12), refused for a hook body (``core.hookkeys.parse_body``).
    """

    obj: dict[str, Any] | None
    recovered: bool = False
    reason: str | None = None
    nonfinite: bool = False


# Nesting the lenient path accepts. Bounded explicitly (not by Python's recursion limit,
# which depends on how deep the caller's stack is) so the daemon and a replay decide alike;
# orjson's fast path has its own fixed limit (1024).
MAX_LENIENT_DEPTH = 512  # containers, the outermost object counting 1


# SPEC §11 (memory under 300 MB): a line under max_line_bytes can still decode into far more
# memory than its bytes: `[{},{},...]` is one dict per 3 bytes (a 60 MB line of them takes
# 1.87 GB). Every decoded value costs at most about VALUE_BYTES (a one-key dict ~190 B is spelled
# with 3 structural bytes, `{`, `:`, `,`), and each takes a structural byte to write, so
# ``VALUE_BYTES`` x the structural bytes bounds what decoding a line may take, counted before decoding.
VALUE_BYTES = 100
MAX_LINE_DECODED_BYTES = 128 << 20  # a transcript line (one at a time per reader)
MAX_BODY_DECODED_BYTES = 32 << 20  # a hook body (bodies in flight are held until their commit)
MAX_BODIES_DECODED_BYTES = 64 << 20  # every hook body in flight together (``decoded_bytes`` each)


def _structural(data: bytes) -> int:
    """Bytes of ``{ [ , :`` in ``data`` (those inside strings too: an upper bound of its values)."""
    return data.count(b"{") + data.count(b"[") + data.count(b",") + data.count(b":")


def value_marks(data: bytes) -> int:
    """Bytes of ``{ [ , :`` in ``data``: ``too_wide``'s count, for a caller that needs it too
    (``decoded_bytes``) and passes it on (``marks``) so a large body is counted once. Counts the bytes
    four times; pure."""
    return _structural(data)


def too_wide(data: bytes, max_decoded_bytes: int, marks: int | None = None) -> bool:
    """Whether decoding ``data`` could take more than ``max_decoded_bytes`` of memory.

    Cheap: nothing is counted for a line too short to reach the budget (``len(data) x VALUE_BYTES``);
    else four byte counts of ``{ [ , :`` (those inside strings count too: an upper bound).

    Args:
        data: bytes of one JSON document.
        max_decoded_bytes: int, bytes; the budget.
        marks: ``value_marks(data)`` when the caller has it already (not counted again).
    """
    if len(data) * VALUE_BYTES <= max_decoded_bytes:
        return False
    return (_structural(data) if marks is None else marks) * VALUE_BYTES > max_decoded_bytes


def decoded_bytes(data: bytes, marks: int | None = None) -> int:
    """An upper bound of the memory decoding ``data`` can take, bytes: ``VALUE_BYTES`` per ``{ [ , :``
    (``too_wide``'s count; ``marks`` when the caller has it, else counted here) plus the bytes
    themselves (the text of its strings). What a body in flight is charged against a shared budget
    (``ingestd.http.hooks``). Pure."""
    return (_structural(data) if marks is None else marks) * VALUE_BYTES + len(data)


# The lenient pass holds the line as text (up to 4 bytes a character: one astral character makes
# CPython store all of it so), the decoded strings and their repaired copies at once: about 12 bytes
# per byte of the line (a 60 MiB line of one string peaks at 590 MB). A line whose lenient
# pass could take more than its budget is not decoded (``TOO_WIDE``); its head and tail are salvaged.
LENIENT_BYTES_PER_BYTE = 12

# The reasons a line is refused, besides ``not_json`` and ``not_object``: what it is, said plainly.
TOO_DEEP = "too_deep"
NUMBER_TOO_LARGE = "number_too_large"
TOO_WIDE = "too_wide"
# Reasons of a line that is JSON but cannot be taken apart within the decoder's limits: what its head
# and tail tell still counts (``ingestd.core.oversized.salvage_line``), as for an oversized line.
UNDECODABLE = frozenset((TOO_DEEP, NUMBER_TOO_LARGE, TOO_WIDE))
# Longest integer the lenient path converts: CPython's default int/str limit, fixed here so that
# PYTHONINTMAXSTRDIGITS cannot make two runs decide differently.
MAX_INT_DIGITS = 4300


class _TooDeep(Exception):
    pass


class _TooLarge(Exception):
    pass


def _int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS + (text[0] == "-"):
        raise _TooLarge
    return int(text)


# A lone surrogate U+D800+n becomes U+F0000+n (Supplementary Private Use Area-A): text SQLite
# can store, one-to-one, so two ids that differ only in their damaged characters stay two ids
# (a `?` for each once merged `\ud800x` and `\udc00x` into one session). SPEC §12.
_SURROGATE = re.compile("[\ud800-\udfff]")
PUA_BASE = 0xF0000


def _pua(m: re.Match[str]) -> str:
    return chr(PUA_BASE + ord(m.group()) - 0xD800)


def _fix(s: str) -> str:
    return s if s.isascii() else _SURROGATE.sub(_pua, s)


def _scrub(value: Any) -> Any:
    """``value`` with every lone surrogate replaced, keys included; iterative (any depth is safe).

    Raises:
        _TooDeep: nesting beyond ``MAX_LENIENT_DEPTH``.
    """
    out: list[Any] = [None]
    # (value, container to write into, key or index there, depth); a colliding repaired key
    # keeps the last value, as a dict literal would.
    stack: list[tuple[Any, Any, Any, int]] = [(value, out, 0, 1)]
    while stack:
        v, parent, k, depth = stack.pop()
        if isinstance(v, str):
            parent[k] = _fix(v)
            continue
        if depth > MAX_LENIENT_DEPTH and isinstance(v, list | dict):
            raise _TooDeep
        if isinstance(v, list):
            new_list: list[Any] = [None] * len(v)
            parent[k] = new_list
            stack.extend((x, new_list, i, depth + 1) for i, x in reversed(list(enumerate(v))))
        elif isinstance(v, dict):
            new_dict: dict[str, Any] = {}
            parent[k] = new_dict
            items = [(_fix(kk), x) for kk, x in v.items()]
            for kk, _x in items:
                new_dict[kk] = None
            stack.extend((x, new_dict, kk, depth + 1) for kk, x in reversed(items))
        else:
            parent[k] = v
    return out[0]


BOM = b"\xef\xbb\xbf"


def repaired(value: Any) -> Any:
    """``value`` (decoded JSON) with every lone surrogate mapped one-to-one (``_fix``), keys
    included; None when nested deeper than ``MAX_LENIENT_DEPTH``. For objects decoded by other
    means than ``decode_line`` (``ingestd.core.oversized.salvage``): text SQLite can bind."""
    try:
        return _scrub(value)
    except _TooDeep:
        return None


def decode_line(data: bytes, max_decoded_bytes: int = MAX_LINE_DECODED_BYTES, marks: int | None = None) -> Decoded:
    """Decode one line (no terminator) into a JSON object, leniently, within a memory budget.

    Every decoding of a log row or a body goes through here, so the budget (SPEC §11) holds for a
    row logged whole by an older ingestd too: a line whose values (``too_wide``) or whose lenient
    pass (``LENIENT_BYTES_PER_BYTE``) could take more than ``max_decoded_bytes`` is not decoded
    (reason ``too_wide``).

    A UTF-8 byte-order mark before the object is skipped (editors and sync tools write one at
    the start of a file; orjson refuses it); the log keeps the bytes, offsets stay exact.

    Args:
        data: bytes of the line.
        max_decoded_bytes: int, bytes; the budget (a transcript line's by default).
        marks: ``value_marks(data)`` when the caller counted it already (``too_wide``).

    Returns:
        ``Decoded``; never raises.
    """
    if data[:3] == BOM:
        data = data[3:]
    if too_wide(data, max_decoded_bytes, marks):
        return Decoded(None, reason=TOO_WIDE)
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        if str(e).startswith("depth limit"):
            # orjson stopped at its depth limit (1024 levels, "depth limit exceeded: line 1 column
            # ..."): the lenient pass, bounded at MAX_LENIENT_DEPTH, could only end in too_deep too,
            # after decoding the whole line (a 60 MB line: 419 ms)
            return Decoded(None, reason=TOO_DEEP)
    else:
        if isinstance(obj, dict):
            return Decoded(obj)
        return Decoded(None, reason="not_object")
    if len(data) * LENIENT_BYTES_PER_BYTE > max_decoded_bytes:
        return Decoded(None, reason=TOO_WIDE)
    try:
        text = data.decode("utf-8", "replace")
        constants: list[str] = []

        def constant(name: str) -> float:
            constants.append(name)
            return float(name)

        loose = json.loads(text, parse_constant=constant, parse_int=_int)
        if not isinstance(loose, dict):
            return Decoded(None, reason="not_object")
        return Decoded(_scrub(loose), recovered=True, nonfinite=bool(constants))
    except (RecursionError, _TooDeep):
        return Decoded(None, reason=TOO_DEEP)
    except _TooLarge:
        return Decoded(None, reason=NUMBER_TOO_LARGE)
    except ValueError:
        return Decoded(None, reason="not_json")
