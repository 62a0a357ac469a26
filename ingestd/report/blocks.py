"""``ingestd blocks``: usage in 5-hour billing windows, the way Claude's plan limits count it.

A block starts at the hour of its first activity and lasts 5 hours; activity at or past its end
starts the next block at that activity's hour (ccusage's rule; an idle gap longer than 5 hours is
past the end, so it needs no rule of its own). Where Claude Code's status line gave an official
``rate_limits.five_hour.resets_at`` (``rate_limit_samples``, sound samples only), activity inside
``[resets_at - 5h, resets_at)`` belongs to that window instead, and the block says ``official``.

Usage comes from the rollup per UTC quarter-hour slot, priced as ``ingestd cost`` prices it, so the
blocks of a day sum to that day's cost when none crosses midnight. A block's times are its slots':
``first_activity`` is the start of its first active quarter hour. For the active block (``now``
before its end): the burn rate over its active time so far and the cost projected at its end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from ingestd.core.derive import BUCKETS
from ingestd.core.timefmt import format_utc, parse
from ingestd.report.cost import cost_report
from ingestd.report.usage import money
from ingestd.report.window import Window, Zone, slot_time
from ingestd.store.connection import Db, storage_errors

BLOCK = timedelta(hours=5)
SLOT = timedelta(minutes=15)


@dataclass(slots=True)
class _Block:
    start: datetime
    end: datetime
    official: bool
    first: datetime
    last: datetime
    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0))
    cost: Decimal = field(default_factory=Decimal)
    messages: int = 0
    models: set[str] = field(default_factory=set)
    unpriced: dict[str, dict[str, Any]] = field(default_factory=dict)


def official_windows(conn: Db) -> list[tuple[datetime, datetime]]:
    """The official 5-hour windows ``[resets_at - 5h, resets_at)`` of every sound sample, in order."""
    out: list[tuple[datetime, datetime]] = []
    for (r,) in conn.execute(
        "SELECT DISTINCT five_hour_resets_at FROM rate_limit_samples"
        " WHERE five_hour_flag IS NULL AND five_hour_resets_at IS NOT NULL ORDER BY 1"
    ):
        end = parse(str(r))
        if end is not None:
            out.append((end - BLOCK, end))
    return out


def _official(windows: list[tuple[datetime, datetime]], t: datetime) -> tuple[datetime, datetime] | None:
    for start, end in windows:
        if start <= t < end:
            return start, end
    return None


def blocks_report(conn: Db, *, now: datetime, zone: Zone, window: Window, active_only: bool = False) -> dict[str, Any]:
    """Usage per 5-hour block (the module docstring's rules), oldest first. Read-only.

    Returns:
        ``{"tz", "now", "window", "uncounted", "unread", "blocks", "active"}``: each block ``{"start",
        "end", "official", "active", "first_activity", "last_activity", "models", "billed_messages",
        "totals", "tokens", "cost_usd", "cost_complete", "unpriced"}`` (times canonical UTC,
        ``last_activity`` the end of its last active quarter hour); ``active`` is the active block with
        ``burn_usd_per_hour``, ``tokens_per_minute`` and ``projected_cost_usd`` at its end, or None, and
        the window's ``uncounted`` and ``unread`` (as in ``cost``: undated, so no other block holds
        them), any of which makes it not ``cost_complete``. ``active_only``: only that block in ``blocks``.
    """
    with storage_errors():
        doc = cost_report(conn, by="slot,model", window=window, zone=zone)
        windows = official_windows(conn)
    per_slot: dict[str, list[dict[str, Any]]] = {}
    for row in doc["rows"]:
        per_slot.setdefault(row["slot"], []).append(row)
    blocks: list[_Block] = []
    cur: _Block | None = None
    for slot in sorted(per_slot):
        t = slot_time(slot)
        if cur is None or not (cur.start <= t < cur.end):
            w = _official(windows, t)
            if w is not None:
                cur = _Block(w[0], w[1], True, t, t)
            else:
                start = t.replace(minute=0)
                end = start + BLOCK
                later = [s for s, _ in windows if start < s < end]
                cur = _Block(start, min([end, *later]), False, t, t)
            blocks.append(cur)
        cur.last = t
        for row in per_slot[slot]:
            for b in BUCKETS:
                cur.totals[b] += row["totals"][b]
            cur.cost += Decimal(row["cost_usd"])
            cur.messages += row["billed_messages"]
            cur.models.add(row["model"])
            for model, u in row["unpriced"].items():
                acc = cur.unpriced.setdefault(model, {"tokens": 0, "messages": 0, "reasons": set()})
                acc["tokens"] += u["tokens"]
                acc["messages"] += u["messages"]
                acc["reasons"].update(u.get("reasons", ()))
    out = [_block_json(b, now) for b in blocks]
    active = next((b for b in out if b["active"]), None)
    if active is not None:
        # undated (records whose usage no bucket holds, bytes not read yet): the running block's
        # figure so far does not hold them, so it is not called complete
        active["uncounted"], active["unread"] = doc["uncounted"], doc["unread"]
        if doc["uncounted"]["records"] or doc["unread"]["bytes"]:
            active["cost_complete"] = False
    return {
        "tz": zone.name,
        "now": format_utc(now),
        "window": window.to_json(),
        "uncounted": doc["uncounted"],
        "unread": doc["unread"],
        "blocks": [active] if active_only and active else ([] if active_only else out),
        "active": active,
    }


DECIDING_SPANS = (timedelta(hours=24), timedelta(days=7), timedelta(days=60))


def active_block(conn: Db, *, now: datetime, zone: Zone) -> dict[str, Any] | None:
    """The block running at ``now`` (``blocks_report``'s ``active``, with its burn rate and
    projection), or None, read from the shortest recent span that decides it. Read-only.

    A block's start depends on the blocks before it, back to the last idle stretch of 5 hours or
    more (after one, activity starts a block at its own hour whatever came before). So the span is
    widened (``DECIDING_SPANS``, then all history) until the active block is official (its window is
    Claude Code's own), the span holds no activity before ``now``, or such a stretch lies between
    the span's start and the last block begun by ``now``: the answer is then the one
    ``blocks_report`` gives over all history.

    Raises:
        StorageError: the database refused the read.
    """
    hour = now.replace(minute=0, second=0, microsecond=0)
    for since in [*(hour - span for span in DECIDING_SPANS), None]:
        doc = blocks_report(conn, now=now, zone=zone, window=Window(since, None))
        active: dict[str, Any] | None = doc["active"]
        if since is None or (active is not None and active["official"]):
            return active
        started = [b for b in doc["blocks"] if _at(b["start"]) <= now]
        edges = [since, *(_at(b["last_activity"]) for b in started[:-1])]
        firsts = [_at(b["first_activity"]) for b in started]
        if not started or any(f - e >= BLOCK for e, f in zip(edges, firsts, strict=True)):
            return active
    return None  # unreachable: the last span is all history


def _at(text: str) -> datetime:
    t = parse(text)
    assert t is not None, text  # blocks_report writes canonical UTC times
    return t


def _block_json(b: _Block, now: datetime) -> dict[str, Any]:
    active = b.start <= now < b.end
    unpriced = {m: {**u, "reasons": sorted(u["reasons"])} for m, u in b.unpriced.items()}
    tokens = sum(b.totals.values())
    doc: dict[str, Any] = {
        "start": format_utc(b.start),
        "end": format_utc(b.end),
        "official": b.official,
        "active": active,
        "first_activity": format_utc(b.first),
        "last_activity": format_utc(b.last + SLOT),
        "models": sorted(b.models),
        "billed_messages": b.messages,
        "totals": b.totals,
        "tokens": tokens,
        "cost_usd": money(b.cost),
        "cost_complete": not unpriced,
        "unpriced": unpriced,
    }
    if active:
        hours = max((now - b.first).total_seconds(), SLOT.total_seconds()) / 3600
        burn = b.cost / Decimal(str(hours))
        left = Decimal(str(max((b.end - now).total_seconds(), 0) / 3600))
        doc["burn_usd_per_hour"] = money(burn.quantize(Decimal("0.000001")))
        doc["tokens_per_minute"] = round(tokens / (hours * 60))
        doc["projected_cost_usd"] = money((b.cost + burn * left).quantize(Decimal("0.000001")))
        doc["remaining_minutes"] = int((b.end - now).total_seconds() // 60)
    return doc
