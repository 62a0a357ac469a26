"""``ingestd limits``: the official plan limits Claude Code reported, and what they lead to (SPEC §15).

Read from ``rate_limit_samples`` (status-line snapshots, ``ingestd.core.statusline``). For each
official window (``five_hour``, ``seven_day``) the latest sample's ``used_percentage`` and
``resets_at`` are **official** (Claude Code's numbers, as it had them when it drew its status line);
how old that sample is says how far to trust them. The burn rate and the time 100 % would be reached
at it are **estimated** by ingestd: the rise between the first and the latest sound sample of the
same window (the same ``resets_at``, within ``SAME_RESET``) since the percentage last fell (it only
rises within a window: a fall is another account's samples, or a correction), per hour. A flagged sample (a null or
impossible percentage, a reset in the past or beyond the window's length) is shown with its flag and
never used for an estimate. Beside them, the latest sample's session: Claude Code's own cost
estimate next to ingestd's exact cost (``ingestd.report.cost``), a cross-check.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ingestd.core.statusline import WINDOWS
from ingestd.core.timefmt import format_utc, parse
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, Zone
from ingestd.store.connection import Db, storage_errors

SAME_RESET = timedelta(minutes=2)
MIN_SPAN = timedelta(minutes=1)  # two samples closer than this give no rate
HISTORY_LIMIT = 1000


def _samples(conn: Db, window: str) -> list[tuple[Any, ...]]:
    """(sampled_at, pct, resets_at, flag, session_id, raw_event_id) of every sample carrying the
    window (a percentage or a flag), newest first."""
    sql = (
        f"SELECT sampled_at, {window}_pct, {window}_resets_at, {window}_flag, session_id, raw_event_id"
        f" FROM rate_limit_samples WHERE {window}_pct IS NOT NULL OR {window}_flag IS NOT NULL"
        " ORDER BY sampled_at DESC, raw_event_id DESC LIMIT ?"
    )
    return [tuple(r) for r in conn.execute(sql, (HISTORY_LIMIT,))]


def _same_window(a: str | None, b: str | None) -> bool:
    da, db = parse(a), parse(b)
    return da is not None and db is not None and abs(da - db) <= SAME_RESET


def _rising(sound: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The newest samples (newest first) over which the used percentage never fell: within one window
    it only rises, so a fall means samples of two accounts (or a correction) and a rate across it
    would be negative or wrong. Pure."""
    out: list[tuple[Any, ...]] = []
    for s in sound:
        if out and float(s[1]) > float(out[-1][1]):
            break
        out.append(s)
    return out


def window_report(samples: list[tuple[Any, ...]], name: str, now: datetime, history: bool) -> dict[str, Any] | None:
    """One window's part of the report from its samples (newest first), or None without any. Pure."""
    if not samples:
        return None
    at, pct, reset, flag, sid, _ = samples[0]
    sampled = parse(at)
    doc: dict[str, Any] = {
        "official": {"used_percentage": pct, "resets_at": reset, "flag": flag},
        "sampled_at": at,
        "sample_age_s": round((now - sampled).total_seconds(), 1) if sampled is not None else None,
        "session_id": sid,
        "estimated": {"burn_pct_per_hour": None, "full_at": None, "full_before_reset": None, "samples": 0},
    }
    resets = parse(reset)
    if resets is not None and flag is None and resets <= now:
        doc["official"]["reset_passed"] = True  # the window has reset since: the percentage is the old one's
    window = [s for s in samples if s[3] is None and s[1] is not None and _same_window(s[2], reset)]
    sound = _rising(window)
    est = doc["estimated"]
    est["samples"] = len(sound)
    if len(sound) < len(window):
        est["fell_at"] = sound[-1][0]  # the first sample after a fall: nothing older is used
    if flag is None and len(sound) >= 2:
        last, first = sound[0], sound[-1]
        t_last, t_first = parse(last[0]), parse(first[0])
        if t_last is not None and t_first is not None and t_last - t_first >= MIN_SPAN:
            hours = (t_last - t_first).total_seconds() / 3600
            rate = (float(last[1]) - float(first[1])) / hours
            est["burn_pct_per_hour"] = round(rate, 2)
            est["since"] = first[0]
            if rate > 0:
                full = t_last + timedelta(hours=(100.0 - float(last[1])) / rate)
                if full - t_last < timedelta(days=3650):
                    est["full_at"] = format_utc(full)
                    est["full_before_reset"] = resets is not None and full < resets
    if history:
        doc["history"] = [
            {"sampled_at": s[0], "used_percentage": s[1], "resets_at": s[2], "flag": s[3], "session_id": s[4]}
            for s in reversed(samples)
        ]
    doc["window_hours"] = WINDOWS[name].total_seconds() / 3600
    return doc


def limits_report(conn: Db, *, now: datetime, zone: Zone, history: bool = False) -> dict[str, Any]:
    """The ``ingestd limits`` document. Read-only.

    Returns:
        ``{"now", "samples", "windows": {"five_hour": ... | None, "seven_day": ... | None},
        "cost_check": {"session_id", "sampled_at", "claude_code_usd" (its estimate), "ingestd_usd"
        (exact), "ingestd_complete"} | None}``; each window ``{"official": {"used_percentage",
        "resets_at", "flag"}, "sampled_at", "sample_age_s", "session_id", "estimated":
        {"burn_pct_per_hour", "since", "full_at", "full_before_reset", "samples", "fell_at"?}, "window_hours",
        "history"?}``.

    Raises:
        StorageError: the database refused the read.
    """
    with storage_errors():
        total = int(str(conn.execute("SELECT count(*) FROM rate_limit_samples").fetchall()[0][0]))
        windows = {name: window_report(_samples(conn, name), name, now, history) for name in WINDOWS}
        latest = conn.execute(
            "SELECT session_id, sampled_at, cc_cost_usd FROM rate_limit_samples WHERE cc_cost_usd IS NOT NULL"
            " ORDER BY sampled_at DESC, raw_event_id DESC LIMIT 1"
        ).fetchall()
    check = None
    if latest:
        sid, at, cc = latest[0]
        exact = cost_report(conn, by=None, window=Window(None, None), zone=zone, session=str(sid))
        check = {
            "session_id": sid,
            "sampled_at": at,
            "claude_code_usd": cc,
            "ingestd_usd": exact["cost_usd"],
            "ingestd_complete": exact["cost_complete"],
        }
    return {"now": format_utc(now), "samples": total, "windows": windows, "cost_check": check}


_LABELS = {"five_hour": "5-hour", "seven_day": "7-day"}


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s} s ago"
    if s < 7200:
        return f"{s // 60} min ago"
    if s < 172800:
        return f"{s // 3600} h ago"
    return f"{s // 86400} days ago"


def _local(text: str | None, zone: Zone) -> str:
    dt = parse(text)
    return dt.astimezone(zone.tz).strftime("%a %Y-%m-%d %H:%M") if dt is not None else "?"


def limits_lines(doc: dict[str, Any], zone: Zone) -> list[str]:
    """The terminal view of ``limits_report``'s document (times in ``zone``). Pure."""
    if not doc["samples"]:
        return [
            "no status-line samples yet: `ingestd statusline install` makes Claude Code's status line record them",
            "(Claude Code reports plan limits to its status line only for Pro/Max subscriptions)",
        ]
    out: list[str] = []
    for name, label in _LABELS.items():
        w = doc["windows"][name]
        if w is None:
            out.append(f"{label}: no official figure in any sample (Pro/Max subscriptions only)")
            continue
        o, e = w["official"], w["estimated"]
        pct = "?" if o["used_percentage"] is None else f"{o['used_percentage']:g}%"
        flag = f" [flagged: {o['flag']}]" if o["flag"] else ""
        passed = " (that reset has passed)" if o.get("reset_passed") else ""
        out.append(
            f"{label}: {pct} used (official), resets {_local(o['resets_at'], zone)}{passed}{flag};"
            f" sampled {_ago(w['sample_age_s'])}"
        )
        if e["burn_pct_per_hour"] is not None:
            full = ""
            if e["full_at"] is not None:
                when = "before" if e["full_before_reset"] else "after"
                full = f"; 100% at {_local(e['full_at'], zone)} at that rate ({when} the reset)"
            out.append(f"  burn {e['burn_pct_per_hour']:g}%/h (estimated from {e['samples']} samples){full}")
        else:
            out.append("  burn rate: not enough sound samples in this window to estimate")
        if e.get("fell_at") is not None:
            out.append(
                f"  the used percentage fell before {_local(e['fell_at'], zone)} (another account's samples?):"
                " the samples before it are not used"
            )
        for h in w.get("history", []):
            hp = "?" if h["used_percentage"] is None else f"{h['used_percentage']:g}%"
            out.append(
                f"    {_local(h['sampled_at'], zone)}  {hp:>6}  resets {_local(h['resets_at'], zone)}"
                + (f"  [{h['flag']}]" if h["flag"] else "")
            )
    c = doc["cost_check"]
    if c is not None:
        cc = "?" if c["claude_code_usd"] is None else f"${c['claude_code_usd']:.4f}"
        exact = f"${c['ingestd_usd']}" + ("" if c["ingestd_complete"] else " + unpriced usage")
        out.append(f"session {c['session_id']}: ingestd {exact} (exact) · Claude Code {cc} (its estimate)")
    return out
