"""Status-line snapshots: which input is one, its log key, its ``rate_limit_samples`` row (SPEC §15). Pure.

Claude Code runs its ``statusLine`` command after every assistant message (and on a timer) with one
JSON object on stdin (docs/claude-code.md §2). The parts worth keeping are the *snapshot*: the
official plan limits (``rate_limits.five_hour`` / ``seven_day``: ``used_percentage`` 0-100,
``resets_at`` epoch seconds; Pro/Max only), Claude Code's own cost estimate
(``cost.total_cost_usd``), the context window and the model. A snapshot is logged once per
session: its key hashes the session id and the snapshot's parts, not the timers and durations
that change on every run, so re-running the status line on an unchanged session inserts nothing.

The sample row keeps what is sound and flags what is not (``FLAGS``), one flag per window: a
window present with a null or out-of-range percentage, a ``resets_at`` in the past or beyond the
window's length (never used to align anything), is stored with its flag; a window absent (an API
key session, or before the first response) is all NULL with no flag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from hashlib import blake2b
from typing import Any

import orjson

from ingestd.core.decode import decode_line
from ingestd.core.records import LogRow
from ingestd.core.rows import RateLimitSampleRow
from ingestd.core.storable import storable, storable_or_none
from ingestd.core.timefmt import format_utc, parse

SOURCE = "statusline"
EVENT_TYPE = "snapshot"
ORIGIN = "statusline"
# The official windows: name -> length. A reset later than one length (plus slack) after the
# sample cannot be the window's own.
WINDOWS: dict[str, timedelta] = {"five_hour": timedelta(hours=5), "seven_day": timedelta(days=7)}
RESET_SLACK = timedelta(minutes=5)
NULL = "null"  # the window is there, its used_percentage or resets_at is null
BAD_PERCENTAGE = "bad_percentage"  # not a number, or outside 0..100
RESET_PAST = "reset_past"  # resets_at before the sample (by more than the slack)
RESET_ABSURD = "reset_absurd"  # not a number, or beyond the window's length after the sample
FLAGS = (NULL, BAD_PERCENTAGE, RESET_PAST, RESET_ABSURD)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One status-line input that can be logged.

    Attributes:
        session_id: str, the input's ``session_id``.
        body: dict, the decoded object.
        raw: bytes, the input exactly as received.
    """

    session_id: str
    body: dict[str, Any] = field(repr=False)
    raw: bytes = field(default=b"", repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class NotASnapshot:
    """An input that cannot be logged: ``reason`` (``invalid_json``, ``not_an_object``,
    ``missing_session_id``) and one human sentence."""

    reason: str
    detail: str


def parse_input(data: bytes) -> Snapshot | NotASnapshot:
    """Decide whether ``data`` (the status line's stdin) is a snapshot: a JSON object with a
    non-blank string ``session_id``. Never raises."""
    dec = decode_line(data.strip())
    if dec.obj is None:
        return NotASnapshot("invalid_json", f"the input is not a JSON object ({dec.reason or 'not JSON'})")
    sid = dec.obj.get("session_id")
    if not isinstance(sid, str) or not sid.strip():
        return NotASnapshot("missing_session_id", "the input has no string session_id")
    return Snapshot(sid, dec.obj, data)


def get_path(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...``, or None where a step is not a dict. Pure."""
    for name in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(name)
    return obj


def snapshot_part(body: dict[str, Any]) -> dict[str, Any]:
    """What makes two inputs of one session the same snapshot: the limits, Claude Code's cost,
    the context window and the model (not durations, line counts or the prompt cache's timers)."""
    return {
        "rate_limits": body.get("rate_limits"),
        "cost": get_path(body, "cost", "total_cost_usd"),
        "context_window": body.get("context_window"),
        "model": get_path(body, "model", "id"),
    }


def snapshot_key(snap: Snapshot) -> str:
    """The log key of a snapshot: ``s:<blake2b-16(session_id, snapshot_part)>`` (one row per
    distinct snapshot of a session; the first input carrying it is the payload kept)."""
    part = canonical_json(snapshot_part(snap.body))
    h = blake2b(digest_size=16)
    h.update(snap.session_id.encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    h.update(part)
    return f"s:{h.hexdigest()}"


def canonical_json(doc: Any) -> bytes:
    """``doc`` as JSON with sorted keys, at any depth and with integers of any size (where
    ``orjson.dumps`` stops at 255 levels and 64 bits), so every input the decoder took has a key.
    Iterative; the bytes are the same as ``orjson.dumps(doc, option=OPT_SORT_KEYS)`` where that
    succeeds. Pure."""
    out: list[bytes] = []
    todo: list[Any] = [doc]
    while todo:
        v = todo.pop()
        if isinstance(v, bytes):
            out.append(v)
        elif isinstance(v, dict):
            keys = sorted(v)
            todo.append(b"}")
            for i in range(len(keys) - 1, -1, -1):
                todo.append(v[keys[i]])
                todo.append((b"," if i else b"") + orjson.dumps(keys[i]) + b":")
            todo.append(b"{")
        elif isinstance(v, list):
            todo.append(b"]")
            for i in range(len(v) - 1, -1, -1):
                todo.append(v[i])
                if i:
                    todo.append(b",")
            todo.append(b"[")
        elif isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64:
            out.append(str(v).encode("ascii"))
        else:
            out.append(orjson.dumps(v))
    return b"".join(out)


def _number(v: Any) -> float | None:
    """``v`` as a finite float, or None (booleans are not numbers here; nor an integer past a float's range)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def window_of(win: Any, length: timedelta, sampled: datetime | None) -> tuple[float | None, str | None, str | None]:
    """One official window (``{used_percentage, resets_at}``) as ``(percentage, resets_at, flag)``:
    the percentage when a number in 0..100, ``resets_at`` as canonical UTC when it is a time a
    datetime can hold, and the first problem found (``FLAGS``; None: sound or absent)."""
    if win is None:
        return None, None, None
    if not isinstance(win, dict):
        return None, None, BAD_PERCENTAGE
    flag: str | None = None
    raw_pct = win.get("used_percentage")
    pct = _number(raw_pct)
    if raw_pct is None:
        flag = NULL
    elif pct is None or not 0 <= pct <= 100:
        flag, pct = BAD_PERCENTAGE, None
    raw_reset = win.get("resets_at")
    secs = _number(raw_reset)
    reset: datetime | None = None
    if secs is not None:
        try:
            reset = datetime.fromtimestamp(secs, tz=UTC)
        except (OverflowError, OSError, ValueError):
            reset = None
    if raw_reset is None:
        flag = flag or NULL
    elif reset is None:
        flag = flag or RESET_ABSURD
    elif sampled is not None:
        if reset < sampled - RESET_SLACK:
            flag = flag or RESET_PAST
        elif reset > sampled + length + RESET_SLACK:
            flag = flag or RESET_ABSURD
    return pct, (format_utc(reset) if reset is not None else None), flag


def sample_row(row: LogRow, obj: dict[str, Any]) -> RateLimitSampleRow:
    """The ``rate_limit_samples`` row of one logged snapshot (``row``, decoded as ``obj``); its
    time is the log row's receipt time."""
    sampled = parse(row.received_at)
    limits = obj.get("rate_limits")
    limits = limits if isinstance(limits, dict) else {}
    five = window_of(limits.get("five_hour"), WINDOWS["five_hour"], sampled)
    seven = window_of(limits.get("seven_day"), WINDOWS["seven_day"], sampled)
    model = get_path(obj, "model", "id")
    version = obj.get("version")
    ctx_pct = _number(get_path(obj, "context_window", "used_percentage"))
    cost = _number(get_path(obj, "cost", "total_cost_usd"))
    return RateLimitSampleRow(
        row.id,
        storable(str(row.session_id)),
        row.received_at,
        storable_or_none(model if isinstance(model, str) else None),
        *five,
        *seven,
        cost if cost is not None and cost >= 0 else None,
        ctx_pct,
        storable_or_none(version if isinstance(version, str) else None),
    )
