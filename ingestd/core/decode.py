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
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Decoded:
    """The decoding of one line.

    Attributes:
        obj: dict | None, the JSON object (None when the line is invalid).
        recovered: bool, the object was obtained only by lenient decoding.
        reason: str | None, why the line is invalid (``not_json``, ``not_object``).
    """

    obj: dict[str, Any] | None
    recovered: bool = False
    reason: str | None = None


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    return value


def decode_line(data: bytes) -> Decoded:
    """Decode one line (no terminator) into a JSON object, leniently.

    Args:
        data: bytes of the line.

    Returns:
        ``Decoded``; never raises.
    """
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    else:
        if isinstance(obj, dict):
            return Decoded(obj)
        return Decoded(None, reason="not_object")
    try:
        text = data.decode("utf-8", "replace")
        loose = json.loads(text)
    except (ValueError, RecursionError):
        return Decoded(None, reason="not_json")
    if not isinstance(loose, dict):
        return Decoded(None, reason="not_object")
    return Decoded(_scrub(loose), recovered=True)
