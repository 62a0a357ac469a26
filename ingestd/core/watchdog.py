"""The watchdog's pure parts (DESIGN.md "Status", SPEC §4.2): the window, the cutoff, the tick row.

Agents and sessions idle for ``window_s`` before the log's newest time go ``unknown``. The
store's pass (``ingestd.store.watchdog_pass``) applies a cutoff computed here; the daemon's
tick (``ingestd.daemon.root``) logs a ``watchdog`` row built here, recording the clock and
the window so every writer and a replay apply the same ones.
"""

from __future__ import annotations

from datetime import timedelta

import orjson

from ingestd.core.records import NewLogRow
from ingestd.core.timefmt import format_utc, from_epoch_ns, parse

WATCHDOG_WINDOW_S = 600  # seconds of inactivity before ``unknown`` when no window is logged


def window_of(payload: bytes | str) -> int | None:
    """The ``window_s`` a ``watchdog`` log row records (whole seconds >= 1), else None."""
    try:
        doc = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    w = doc.get("window_s") if isinstance(doc, dict) else None
    return w if isinstance(w, int) and not isinstance(w, bool) and w >= 1 else None


_CUTOFF_HEADS: dict[tuple[str, int], str] = {}


def watchdog_cutoff(as_of: str, window_s: int) -> str | None:
    """``as_of - window_s`` spelled canonically; None when ``as_of`` is not an instant.

    It runs in every write transaction (parsing and formatting it was about a seventh of a
    one-hook transaction's CPU). A whole number of seconds leaves the milliseconds alone, so
    the date-time part is memoised per second of ``as_of`` and the ``.sssZ`` tail reused.
    """
    if len(as_of) == 24 and as_of[19] == "." and as_of[20:23].isdigit() and as_of[23] == "Z":
        key = (as_of[:19], window_s)
        head = _CUTOFF_HEADS.get(key)
        if head is None:
            t = parse(as_of)
            if t is None:
                return None
            head = format_utc(t - timedelta(seconds=window_s))[:19]
            if len(_CUTOFF_HEADS) >= 256:
                _CUTOFF_HEADS.clear()
            _CUTOFF_HEADS[key] = head
        return head + as_of[19:]
    t = parse(as_of)
    return None if t is None else format_utc(t - timedelta(seconds=window_s))


def tick_cutoff(now_ns: int, window_s: float) -> str:
    """The cutoff of a daemon tick at ``now_ns`` (ns since the epoch): ``now - window_s``, canonical UTC."""
    return from_epoch_ns(now_ns - int(window_s * 1_000_000_000))


def watchdog_row(now_ns: int, window_s: float) -> NewLogRow:
    """The ``watchdog`` log row for a tick at ``now_ns`` (ns since the epoch) with the daemon's window.

    The window is logged with the clock so every writer and a replay apply the same one
    (``ingestd.store.watchdog_pass.effective_window``). Key ``i:w:<as_of>:<window_s>``; source
    ``ingestd``, payload ``{"as_of": now, "window_s": w}`` (whole seconds, at least 1).
    """
    as_of = from_epoch_ns(now_ns)
    window = max(1, int(window_s))
    return NewLogRow(
        idempotency_key=f"i:w:{as_of}:{window}",
        source="ingestd",
        event_type="watchdog",
        payload=orjson.dumps({"as_of": as_of, "window_s": window}),
        received_at=as_of,
        session_id=None,
        origin="ingestd",
    )


def reference_time(newest: str, past: str, held: str, now: str) -> str:
    """The watchdog's ``as_of``: the log's newest receipt time, capped at the clock. Pure.

    A row read while the clock was ahead leaves a receipt time in the future; taken as ``as_of``
    it would pin the reference there and every new session would be idle at once. So when
    ``newest`` is after ``now``, the reference is the newest time not after ``now`` known:
    ``past`` (this batch's) or ``held`` (the reference kept before). Every argument is canonical
    UTC ('' for none); ``now`` is the caller's clock reading.

    Returns:
        str, canonical UTC, or '' when no time is known.
    """
    if newest <= now:
        return newest
    return max(past if past <= now else "", held if held <= now else "")
