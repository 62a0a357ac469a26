"""Validation before SQL: what the guards and constraints would refuse is caught here (SPEC §12). Pure.

"No input stops the pipeline": a record whose projection the database would refuse (a
timestamp that is not an instant, a token count that is not a count) must never abort its
batch. The projector checks every such value with the functions below and, instead of
letting a guard trigger fire, *quarantines* the record: its log row stays, a ``quarantine``
projection row names the reason, origin and byte offset (``ingestd status`` lists them),
and whatever of the record is sound is still projected:

- ``timestamp``: the record's ``timestamp`` is present but not an admitted instant (e.g.
  ``2026-13-45T25:61:61.999Z``, or ``null``). Its usage still counts; the message's ``occurred_at`` is
  *inferred* (``infer_time``): the nearest valid timestamp before it in the same file (origin
  and generation) by byte offset, else the nearest after it. Every other use of the record's
  time (its session's and agent's activity and status evidence, tool start and end) takes the
  same inferred time (``note_time``): dated at the read time, a refused line of an old
  transcript read today made its session "last active" today and "working". A new valid
  timestamp that changes a folded record's inferred time asks for a refold (``needs_refold``),
  which indexes the file's timestamps before folding (``index_time``), so the dates are
  functions of the log alone, in any order. A timestamp more than ``FUTURE_SLACK`` after the
  line was read (``received_at``) is refused the same way: a record dated 2099 kept its session
  "working", out of the watchdog's reach, and counted in every ``--since`` window. A record of
  activity with no ``timestamp`` at all is inferred the same way, and never moves its session's
  activity. Neither is ever dated at its read time (its usage was billed on the ingest day): with
  no dated record in its file such a record is *undated*, moves no activity or status, and its
  usage is in no bucket, its quarantine row saying so (ending ``USAGE_NOT_COUNTED``, counted as
  ``uncounted`` by every cost answer) until a dated record joins the file (a refold).
- ``tokens``: a usage counter present with a value that is not a count (negative,
  fractional, a string, ``1e400``, beyond ``MAX_TOKENS``): that bucket counts 0, the
  message's other buckets count.
- ``storage``: the database refused the row although it passed these checks (the shell
  isolates it by splitting the batch, ``ingestd.store.writer``); recorded by the shell.

The guard triggers stay as the last line of defence; in normal operation they never fire.
"""

from __future__ import annotations

import bisect
import functools
import re
from datetime import datetime, timedelta
from typing import Any

import orjson

from ingestd.core.records import LogRow
from ingestd.core.rows import QuarantineRow
from ingestd.core.state import SessionState
from ingestd.core.timefmt import canonical, format_utc, parse
from ingestd.core.touch import Touched
from ingestd.core.uncounted import USAGE_NOT_COUNTED

# The largest token count believed: no real message comes near it (contexts are ~1e6), and
# millions of them still sum inside SQLite's 64-bit INTEGER (rollup, cost).
MAX_TOKENS = 1 << 40

TIMESTAMP = "timestamp"
TOKENS = "tokens"
STORAGE = "storage"
REASONS = (TIMESTAMP, TOKENS, STORAGE)
# A timestamp refused as in the future names it with these words (``status`` counts them).
FUTURE_DETAIL = "is after the line was read"
# The details of a record without a timestamp: its time inferred from the records beside it, or
# none (undated: no record of its file has one, the same for a refused timestamp, ``UNDATED``); an
# undated record's usage is in no bucket, and its quarantine detail ends saying so
# (``USAGE_NOT_COUNTED``: ``report.usage.uncounted_usage`` counts it).
NO_TIMESTAMP = "no timestamp"
INFERRED_DETAIL = f"{NO_TIMESTAMP}: usage counted, occurred_at inferred from the records beside it"
UNDATED = "nor any record of its file: undated"
UNDATED_DETAIL = f"{NO_TIMESTAMP}, {UNDATED}"
UNDATED_USAGE = UNDATED_DETAIL + USAGE_NOT_COUNTED

# The event_type of the log row (source ``ingestd``) the shell writes when it isolates a row.
STORAGE_MARKER = "quarantine"

# What a detail may quote of a bad value (the value itself can be megabytes).
DETAIL_CHARS = 80

_CANON = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")

# The usage counters read into buckets (``projector.usage_buckets``), by path.
USAGE_FIELDS = (
    ("input_tokens",),
    ("output_tokens",),
    ("cache_read_input_tokens",),
    ("cache_creation_input_tokens",),
    ("cache_creation", "ephemeral_5m_input_tokens"),
    ("cache_creation", "ephemeral_1h_input_tokens"),
)

OriginGen = tuple[str, int]

# The time a part of a message whose timestamp is refused folds with: above every canonical
# instant, so the earliest valid part still wins the minimum; replaced at derive time.
INFER = "~inferred"


def storage_quarantine(
    marker_id: int, session_id: str, origin: str, offset: int | None, payload: bytes
) -> QuarantineRow | None:
    """The ``storage`` quarantine row a ``quarantine`` marker log row stands for, None if unreadable.

    The marker's payload is ``{"raw_event_id": int | null, "key", "reason", "detail"}``
    (``ingestd.store.logrows.quarantine_marker``); a null id (the row itself could not be logged)
    files the quarantine under the marker's own id.
    """
    try:
        doc = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    rid = doc.get("raw_event_id")
    rid = rid if isinstance(rid, int) and not isinstance(rid, bool) else marker_id
    detail = doc.get("detail")
    return QuarantineRow(rid, STORAGE, session_id, origin, offset, detail if isinstance(detail, str) else "")


def shorten(value: Any) -> str:
    """``repr`` of a refused value, cut to ``DETAIL_CHARS`` characters (bindable text)."""
    text = repr(value)
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


FUTURE_SLACK = timedelta(days=1)  # a line cannot have been written this long after it was read
EARLIEST_YEAR = "2000"  # inclusive: years as text compare as numbers in the canonical spelling
LATEST_YEAR = "2100"  # exclusive


def valid_time(value: Any) -> str | None:
    """The canonical spelling of ``value`` when it is an instant the guards admit, else None.

    The spelling Claude Code writes (``YYYY-MM-DDTHH:MM:SS.sssZ``) is checked field by field
    (a month 13 or hour 25 in that shape once reached the guard trigger and aborted the batch);
    anything else goes through ``timefmt.canonical``.
    """
    if isinstance(value, str) and len(value) == 24 and _CANON.fullmatch(value):
        try:
            datetime.fromisoformat(value[:23])
        except ValueError:
            return None
        c: str | None = value
    else:
        c = canonical(value)
    # A real record is written between Claude Code's first release and the end of this century:
    # `0001-01-01…` reached the guard trigger (the row could only be isolated, its tokens lost), and
    # `9999-12-31…` made a session "last active" forever, out of the watchdog's reach. Either is
    # refused like any impossible time, so it is inferred.
    if c is None or not EARLIEST_YEAR <= c[:4] < LATEST_YEAR:
        return None
    return c


@functools.lru_cache(maxsize=64)
def _latest_for(received_at: str) -> str:
    """The latest record time a line read at ``received_at`` may carry (``FUTURE_SLACK`` after)."""
    at = parse(received_at)
    return format_utc(at + FUTURE_SLACK) if at is not None else received_at


def after_read(ts: str, received_at: str) -> bool:
    """Whether a canonical record time is more than ``FUTURE_SLACK`` after its line was read."""
    return ts > received_at and ts > _latest_for(received_at)


def is_count(value: Any) -> bool:
    """A token count: an int (not bool) in ``0..MAX_TOKENS``."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS


def usage_problems(usage: dict[str, Any]) -> list[str]:
    """The usage counters present with a value that is not a count (``null`` is absent), as
    ``field = value`` texts; empty when the usage is sound."""
    out: list[str] = []
    for path in USAGE_FIELDS:
        v: Any = usage
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        if v is not None and not is_count(v):
            out.append(f"usage.{'.'.join(path)} = {shorten(v)}")
    return out


def record_ts(offsets: list[int], times: list[str], offset: int, ts: str) -> int:
    """Insert ``(offset, ts)`` into one file's sorted parallel lists (its timestamp index in
    ``ts_index``, or its refused records in ``bad_ts``); its position, or -1 when already there."""
    i = bisect.bisect_left(offsets, offset)
    if i < len(offsets) and offsets[i] == offset:
        return -1
    offsets.insert(i, offset)
    times.insert(i, ts)
    return i


def retimed(offsets: list[int], i: int, bad: list[int]) -> tuple[int, int]:
    """The slice of ``bad`` (sorted refused offsets) whose ``infer_time`` changed when the valid
    timestamp at ``offsets[i]`` was inserted: those after it up to the next valid one (it is now
    their nearest before), and, when it is the file's first valid one, those before it too (it is
    now their nearest after). The others keep their nearest valid timestamp.
    """
    lo = bisect.bisect_right(bad, offsets[i]) if i > 0 else 0
    hi = bisect.bisect_left(bad, offsets[i + 1]) if i + 1 < len(offsets) else len(bad)
    return lo, hi


def occurred_of(
    locs: dict[tuple[OriginGen, int], str | None], index: dict[OriginGen, tuple[list[int], list[str]]]
) -> str | None:
    """A message's inferred ``occurred_at``: the earliest ``infer_time`` over its refused parts;
    None when none has one (every part in a file with no valid timestamp: undated).

    Args:
        locs: {((origin, gen), offset): None} of the parts (``SessionState.inferred``).
        index: the per-file timestamp indexes (``SessionState.ts_index``).
    """
    empty: tuple[list[int], list[str]] = ([], [])
    times = [infer_time(*index.get(og, empty), off, rec) for (og, off), rec in locs.items()]
    return min((x for x in times if x is not None), default=None)


def infer_time(offsets: list[int], times: list[str], offset: int, received_at: str | None) -> str | None:
    """The inferred ``occurred_at`` of a record at ``offset`` whose timestamp is refused.

    Rule (module docstring): the nearest valid timestamp before it in the same file by byte
    offset, else the nearest after it, else ``received_at`` (``occurred_of`` passes None: a
    message is never dated at its read time; ``inferred_at`` the read time, for what needs one).
    ``offsets`` / ``times`` is the file's sorted index of valid timestamps (every record of that
    file and generation).
    """
    i = bisect.bisect_left(offsets, offset)
    if i > 0:
        return times[i - 1]
    if i < len(offsets):
        return times[i]
    return received_at


def _checked_time(row: LogRow, obj: dict[str, Any]) -> tuple[str | None, bool]:
    """(the record's canonical timestamp or None when refused or absent, whether it was refused for
    being more than ``FUTURE_SLACK`` after the line was read)."""
    raw = obj.get("timestamp")
    vt = valid_time(raw) if raw is not None else None
    if vt is not None and row.source == "jsonl" and row.origin_offset is not None and after_read(vt, row.received_at):
        return None, True
    return vt, False


def inferred_at(state: SessionState, bad_at: tuple[OriginGen, int, str]) -> str:
    """The inferred time (``infer_time``) of the refused record ``bad_at`` (``Touched.bad_at``), from
    the file's index as folded so far (a refold corrects it when that index grows: ``note_time``)."""
    og, off, received_at = bad_at
    offsets, times = state.ts_index.get(og, ([], []))
    got = infer_time(offsets, times, off, received_at)
    return received_at if got is None else got


def index_time(state: SessionState, row: LogRow, obj: dict[str, Any]) -> None:
    """Index the record's valid timestamp when its file is indexed (``ts_index``), as ``note_time``
    would; a refold calls it for every record first, so no record is dated by a partial index."""
    og = (row.origin, row.origin_gen)
    if row.source != "jsonl" or row.origin_offset is None or og not in state.ts_index:
        return
    vt, _ = _checked_time(row, obj)
    if vt is not None:
        record_ts(*state.ts_index[og], row.origin_offset, vt)


def note_time(state: SessionState, row: LogRow, obj: dict[str, Any], t: Touched, infer_absent: bool = False) -> str:
    """The record's time, with the bookkeeping of refused timestamps (``ingestd.core.validate``).

    Returns the canonical timestamp, else, when it is present but refused, or absent from a record
    of activity (``infer_absent``), the inferred time (``inferred_at``; ``t.bad_at`` is set and the
    record quarantined); an absent one sets ``t.untimed``; either sets ``t.undated`` when no record
    of its file has a time to infer from (the read time is then returned for what needs one, but
    such a record dates nothing: no activity, no status, no usage). Else the read time. The
    valid timestamps of a file holding such a record are indexed (offset order) so its inferred
    time is the nearest one; a file folded before it was known to need the index, or a valid
    timestamp that moves the inferred time of a record already folded, asks for a refold.
    """
    t.bad_at = None
    t.untimed = t.undated = False
    vt, future = _checked_time(row, obj)
    off = row.origin_offset
    if row.source != "jsonl" or off is None:
        return vt if vt is not None else row.received_at
    og = (row.origin, row.origin_gen)
    absent = "timestamp" not in obj
    # present but not an instant, ``null`` included; absent, on a record of activity (``infer_absent``)
    if vt is None and (not absent or infer_absent):
        if og not in state.ts_index:
            state.ts_index[og] = ([], [])
            if og in state.seen_origins:
                state.needs_refold = True
        t.bad_at = (og, off, row.received_at)
        record_ts(*state.bad_ts.setdefault(og, ([], [])), off, "")  # its message named by ``name_refused``
        t.untimed = absent
        t.undated = not state.ts_index[og][0]  # a dated record joining later refolds (``retimed``)
        if absent:
            detail = UNDATED_DETAIL if t.undated else INFERRED_DETAIL
        else:
            what = f"{FUTURE_DETAIL} ({row.received_at})" if future else "is not an instant in 2000-2099"
            how = f", {UNDATED}" if t.undated else ": usage counted, occurred_at inferred"
            detail = f"timestamp {shorten(obj.get('timestamp'))} {what}{how}"
        t.quarantined.append(QuarantineRow(row.id, TIMESTAMP, state.session_id, row.origin, off, detail))
        state.seen_origins.add(og)
        return inferred_at(state, t.bad_at)
    if vt is not None and og in state.ts_index:
        offsets, times = state.ts_index[og]
        i = record_ts(offsets, times, off, vt)
        refused = state.bad_ts.get(og)
        if i >= 0 and refused is not None:
            pending, msgs = refused
            lo, hi = retimed(offsets, i, pending)
            # records folded with another inferred time (activity, status, tool times: maxima that
            # cannot be taken back) are folded again; their messages take it at derive time
            state.needs_refold = state.needs_refold or lo < hi
            t.msgs.update(m for m in msgs[lo:hi] if m)
    state.seen_origins.add(og)
    return vt if vt is not None else row.received_at


def name_refused(state: SessionState, og: OriginGen, offset: int, mid: str) -> None:
    """Name ``mid`` as the message of the refused record at ``offset`` of file ``og`` (``note_time``
    entered that record in ``state.bad_ts``)."""
    offsets, msgs = state.bad_ts[og]
    msgs[bisect.bisect_left(offsets, offset)] = mid


def refold_state(state: SessionState) -> SessionState:
    """The empty state to refold a session into when ``state.needs_refold``: its files to index kept,
    and the 1.0.x sidechain agents derived so far (``legacy_emitted``), so that the refold, which
    sees the session's whole log, retracts the provisional ones the folds before it named; likewise
    the message ids seen with several requestIds and the keys derived before they split."""
    return SessionState(
        state.session_id,
        ts_index={og: ([], []) for og in state.ts_index},
        legacy_emitted=set(state.legacy_emitted),
        split_msgs=set(state.split_msgs),
        retract_msgs=set(state.retract_msgs),
    )
