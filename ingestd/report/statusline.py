"""The status line's one line: what it shows (``line_facts``) and how it is drawn (``render``) (SPEC §15).

The daemon answers ``POST /statusline`` with it (``ingestd.http.statusline``). The facts are the
session's exact cost and today's (from the rollup, ``ingestd.report.cost``), Claude Code's own
estimate of the session's cost, the 5-hour block running now (its cost, burn rate and end,
``ingestd.report.blocks.active_block``), the official 5-hour and 7-day percentages with their reset
times, the context window's use and the prompt cache's state (warm until when, or cold and what a
rebuild would write), all from the input Claude Code handed the status line and the database.
``render`` is pure: the fields asked for (``FIELDS``), in that order, joined by
`` · ``, coloured unless told not to (``NO_COLOR``), never longer than ``columns`` (fields dropped
from the end, the last one cut), never holding a control character but its own colour codes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from ingestd.core.statusline import WINDOWS, get_path, window_of
from ingestd.core.timefmt import parse
from ingestd.report.blocks import active_block
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, Zone, make_window
from ingestd.store.connection import Db

# Every field, in the default order.
FIELDS = ("model", "session", "today", "block", "limits", "context", "cache")
DEFAULT_FIELDS = FIELDS
SEP = " · "
_RESET = "\x1b[0m"
_DIM = "\x1b[2m"
_GREEN = "\x1b[32m"
_YELLOW = "\x1b[33m"
_RED = "\x1b[31m"


@dataclass(frozen=True, slots=True)
class Official:
    """One official window as the input gave it.

    Attributes:
        pct: float | None, ``used_percentage`` (0-100) when sound.
        resets_at: datetime | None, aware UTC.
        flag: str | None, what is not sound (``ingestd.core.statusline.FLAGS``).
    """

    pct: float | None
    resets_at: datetime | None
    flag: str | None


@dataclass(frozen=True, slots=True)
class Block:
    """The 5-hour block running now (``blocks_report``'s active block).

    Attributes:
        cost_usd: Decimal, its exact cost so far. complete: bool, no unpriced usage in it.
        missing: str | None, what its cost leaves out (``missing``), None when complete.
        burn_usd_per_hour: Decimal, over its active time so far. end: datetime, aware UTC.
        official: bool, its window is Claude Code's (``resets_at``), not ccusage's rule.
    """

    cost_usd: Decimal
    complete: bool
    burn_usd_per_hour: Decimal
    end: datetime
    official: bool
    missing: str | None = None


@dataclass(frozen=True, slots=True)
class Cache:
    """Claude Code's ``prompt_cache`` as the input gave it.

    Attributes:
        warm: bool. expires_at: datetime | None, aware UTC (``expires_at``, epoch seconds).
        rebuild_tokens: int | None, ``recache_tokens_if_cold``: what a cold start would write.
    """

    warm: bool
    expires_at: datetime | None
    rebuild_tokens: int | None


@dataclass(frozen=True, slots=True)
class LineFacts:
    """What the line can show.

    Attributes:
        model: str | None, the model's display name (else its id).
        session_usd / today_usd: Decimal | None, ingestd's exact cost (None: no session id / not read).
        session_complete / today_complete: bool, no unpriced usage in it.
        session_missing / today_missing: str | None, what that cost leaves out (``missing``).
        cc_usd: float | None, Claude Code's own estimate of the session's cost (finite, >= 0).
        five_hour / seven_day: Official | None, None when the input has no such window.
        context_pct: float | None, the context window's ``used_percentage`` (0-100).
        cc_unsound / context_unsound: bool, the input has that value but it is not one (a string,
            not finite, negative, a percentage past 100): the line shows ``?``, never the value.
        block: Block | None, the 5-hour block running now (None: none, or not read).
        cache: Cache | None, the input's ``prompt_cache`` when it is sound.
    """

    model: str | None = None
    session_usd: Decimal | None = None
    session_complete: bool = True
    cc_usd: float | None = None
    today_usd: Decimal | None = None
    today_complete: bool = True
    session_missing: str | None = None
    today_missing: str | None = None
    five_hour: Official | None = None
    seven_day: Official | None = None
    context_pct: float | None = None
    cc_unsound: bool = False
    context_unsound: bool = False
    block: Block | None = None
    cache: Cache | None = None


def parse_fields(text: str | None) -> tuple[str, ...]:
    """The fields named in ``text`` (comma-separated, known ones only, in the order given), or
    ``DEFAULT_FIELDS`` when it names none. Pure."""
    if not text:
        return DEFAULT_FIELDS
    wanted = tuple(dict.fromkeys(f.strip().lower() for f in text.split(",") if f.strip().lower() in FIELDS))
    return wanted or DEFAULT_FIELDS


def _number(v: Any, high: float = math.inf) -> float | None:
    """``v`` as a finite number in ``[0, high]``, else None (absent, a string, NaN, infinite, out of range)."""
    if not isinstance(v, int | float) or isinstance(v, bool):
        return None
    try:
        x = float(v)
    except OverflowError:  # an integer past float's range
        return None
    return x if math.isfinite(x) and 0 <= x <= high else None


_MAX_EPOCH_S = 253402300799  # 9999-12-31T23:59:59Z


def _cache(pc: Any) -> Cache | None:
    """``prompt_cache`` when its ``warm`` is a bool (else None); a bad ``expires_at`` or token count
    is left out."""
    if not isinstance(pc, dict) or not isinstance(pc.get("warm"), bool):
        return None
    exp = _number(pc.get("expires_at"), _MAX_EPOCH_S)
    tokens = pc.get("recache_tokens_if_cold")
    return Cache(
        warm=pc["warm"],
        expires_at=datetime.fromtimestamp(exp, UTC) if exp is not None else None,
        rebuild_tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else None,
    )


def input_facts(obj: dict[str, Any] | None, now: datetime) -> LineFacts:
    """What the input alone says (no database): model, Claude Code's cost, limits, context, cache. Pure."""
    if obj is None:
        return LineFacts()
    model = get_path(obj, "model", "display_name") or get_path(obj, "model", "id")
    limits = obj.get("rate_limits")
    limits = limits if isinstance(limits, dict) else {}

    def official(name: str) -> Official | None:
        win = limits.get(name)
        if win is None:
            return None
        pct, reset, flag = window_of(win, WINDOWS[name], now)
        return Official(pct, parse(reset) if reset is not None else None, flag)

    cc_raw = get_path(obj, "cost", "total_cost_usd")
    context_raw = get_path(obj, "context_window", "used_percentage")
    cc_usd = _number(cc_raw)
    context_pct = _number(context_raw, 100.0)
    return LineFacts(
        cache=_cache(obj.get("prompt_cache")),
        model=model if isinstance(model, str) else None,
        cc_usd=cc_usd,
        five_hour=official("five_hour"),
        seven_day=official("seven_day"),
        context_pct=context_pct,
        cc_unsound=cc_raw is not None and cc_usd is None,
        context_unsound=context_raw is not None and context_pct is None,
    )


def line_facts(conn: Db, obj: dict[str, Any] | None, now: datetime, zone: Zone) -> LineFacts:
    """``input_facts`` with ingestd's exact costs of the session and of today (in ``zone``) from the
    rollup. Read-only.

    Raises:
        StorageError: the database refused the read.
    """
    base = input_facts(obj, now)
    sid = obj.get("session_id") if obj is not None else None
    today = cost_report(conn, by=None, window=make_window("today", None, zone, now), zone=zone)
    session = (
        cost_report(conn, by=None, window=Window(None, None), zone=zone, session=sid) if isinstance(sid, str) else None
    )
    return LineFacts(
        model=base.model,
        session_usd=Decimal(session["cost_usd"]) if session is not None else None,
        session_complete=bool(session["cost_complete"]) if session is not None else True,
        session_missing=missing(session) if session is not None else None,
        cc_usd=base.cc_usd,
        today_usd=Decimal(today["cost_usd"]),
        today_complete=bool(today["cost_complete"]),
        today_missing=missing(today),
        five_hour=base.five_hour,
        seven_day=base.seven_day,
        context_pct=base.context_pct,
        cc_unsound=base.cc_unsound,
        context_unsound=base.context_unsound,
        block=_block(active_block(conn, now=now, zone=zone)),
        cache=base.cache,
    )


def _block(doc: dict[str, Any] | None) -> Block | None:
    end = parse(doc["end"]) if doc is not None else None
    if doc is None or end is None:
        return None
    return Block(
        cost_usd=Decimal(doc["cost_usd"]),
        complete=bool(doc["cost_complete"]),
        burn_usd_per_hour=Decimal(doc["burn_usd_per_hour"]),
        end=end,
        official=bool(doc["official"]),
        missing=missing(doc),
    )


def missing(doc: dict[str, Any]) -> str | None:
    """What a cost document's figure leaves out, short enough for the line: the unpriced tokens with
    their models and reasons, the records not counted with their first reason, the bytes not read
    yet; None when the figure is complete. Pure."""
    if doc.get("cost_complete", True):
        return None
    out: list[str] = []
    unpriced = doc.get("unpriced") or {}
    if unpriced:
        n = sum(int(u.get("tokens") or 0) for u in unpriced.values())
        reasons = sorted({r for u in unpriced.values() for r in u.get("reasons") or ["no_rate"]})
        models = ", ".join(_clean(m) for m in sorted(unpriced))
        out.append(f"{_tokens(n)} tok unpriced ({models}: {', '.join(reasons)})")
    uncounted = doc.get("uncounted") or {}
    if uncounted.get("records"):
        listed = uncounted.get("reasons") or []
        first = _clean(str(listed[0])) if listed else ""
        why = f": {first if len(first) <= 60 else first[:60].rsplit(' ', 1)[0] + '…'}" if first else ""
        n = uncounted["records"]
        out.append(f"{n} record{'s' if n != 1 else ''} not counted{why}")
    unread = doc.get("unread") or {}
    if unread.get("bytes"):
        out.append(f"{unread['bytes']} B not read yet")
    return "; ".join(out) or None


def _clean(text: str) -> str:
    """``text`` without control or format characters (a name from the input cannot move the cursor)."""
    return "".join(ch for ch in text if ch.isprintable())


def usd(v: Decimal | float, complete: bool = True) -> str:
    """``$1.23`` (cents; ``$0.004`` below a cent), ``+`` when some usage is unpriced. Pure."""
    d = Decimal(str(v)) if isinstance(v, float) else v
    text = f"${d:.2f}" if d >= Decimal("0.01") or d == 0 else f"${d:.3f}"
    return text if complete else text + "+"


def _pct_color(pct: float) -> str:
    return _RED if pct >= 80 else _YELLOW if pct >= 50 else _GREEN


def _reset_text(at: datetime, now: datetime, zone: Zone) -> str:
    local = at.astimezone(zone.tz)
    return local.strftime("%H:%M") if at - now < timedelta(hours=24) else local.strftime("%a %H:%M")


Part = tuple[str, str]  # (plain, coloured)


def _official(label: str, o: Official, now: datetime, zone: Zone) -> Part:
    if o.pct is None:
        return f"{label} ?", f"{_DIM}{label} ?{_RESET}"
    pct = f"{o.pct:.0f}%"
    reset = f" ↻{_reset_text(o.resets_at, now, zone)}" if o.resets_at is not None and o.flag is None else ""
    mark = "?" if o.flag is not None else ""
    plain = f"{label} {pct}{mark}{reset}"
    return plain, f"{_DIM}{label}{_RESET} {_pct_color(o.pct)}{pct}{_RESET}{mark}{_DIM}{reset}{_RESET}"


def _cache_part(c: Cache, now: datetime) -> Part:
    left = (c.expires_at - now).total_seconds() if c.expires_at is not None else None
    if c.warm and (left is None or left > 0):
        when = "" if left is None else f" {int(left // 60)}m" if left >= 60 else f" {int(left)}s"
        colour = _YELLOW if left is not None and left < 60 else _GREEN
        return f"cache{when}", f"{_DIM}cache{_RESET}{colour}{when}{_RESET}"
    rebuild = f" (rebuild {_tokens(c.rebuild_tokens)})" if c.rebuild_tokens else ""
    return f"cache cold{rebuild}", f"{_DIM}cache{_RESET} {_YELLOW}cold{_RESET}{_DIM}{rebuild}{_RESET}"


def _tokens(n: int | None) -> str:
    n = n or 0
    return f"{n / 1_000_000:.1f}M" if n >= 1_000_000 else f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _missing_part(out: list[Part], note: str | None) -> None:
    """After a cost that is not complete (its ``+``), what it leaves out: ``+? 330 tok unpriced
    (claude-mystery-9: no_rate)``, never a complete-looking figure alone; once, when two costs
    leave out the same."""
    text = f"+? {note}" if note else None
    if text is not None and all(p != text for p, _ in out):
        out.append((text, f"{_YELLOW}{text}{_RESET}"))


def _parts(f: LineFacts, fields: tuple[str, ...], now: datetime, zone: Zone) -> list[Part]:
    out: list[Part] = []
    for name in fields:
        if name == "model" and f.model:
            m = _clean(f.model)
            out.append((m, m))
        elif name == "session" and (f.session_usd is not None or f.cc_usd is not None or f.cc_unsound):
            exact = usd(f.session_usd, f.session_complete) if f.session_usd is not None else "?"
            cc = f" (CC {usd(f.cc_usd)})" if f.cc_usd is not None else " (CC ?)" if f.cc_unsound else ""
            out.append((f"session {exact}{cc}", f"{_DIM}session{_RESET} {exact}{_DIM}{cc}{_RESET}"))
            _missing_part(out, f.session_missing if f.session_usd is not None else None)
        elif name == "today" and f.today_usd is not None:
            t = usd(f.today_usd, f.today_complete)
            out.append((f"today {t}", f"{_DIM}today{_RESET} {t}"))
            _missing_part(out, f.today_missing)
        elif name == "block" and f.block is not None:
            b = f.block
            # the burn rate comes from the cost so far: no more complete than it is
            cost, burn = usd(b.cost_usd, b.complete), usd(b.burn_usd_per_hour, b.complete)
            end = f"→{_reset_text(b.end, now, zone)}"
            plain = f"block {cost} {burn}/h {end}"
            out.append((plain, f"{_DIM}block{_RESET} {cost} {_DIM}{burn}/h {end}{_RESET}"))
            _missing_part(out, b.missing)
        elif name == "cache" and f.cache is not None:
            out.append(_cache_part(f.cache, now))
        elif name == "limits":
            for label, o in (("5h", f.five_hour), ("7d", f.seven_day)):
                if o is not None:
                    out.append(_official(label, o, now, zone))
        elif name == "context" and f.context_pct is not None:
            c = f"{f.context_pct:.0f}%"
            out.append((f"ctx {c}", f"{_DIM}ctx{_RESET} {_pct_color(f.context_pct)}{c}{_RESET}"))
        elif name == "context" and f.context_unsound:
            out.append(("ctx ?", f"{_DIM}ctx ?{_RESET}"))
    return out


def render(
    f: LineFacts,
    *,
    fields: tuple[str, ...] = DEFAULT_FIELDS,
    color: bool = True,
    columns: int | None = None,
    now: datetime,
    zone: Zone,
    prefix: str = "",
) -> str:
    """The line (no newline). Pure.

    Args:
        fields: which facts, in order (``parse_fields``).
        color: ANSI colours (False: ``NO_COLOR``).
        columns: the most characters shown (None: no limit): fields are dropped from the end, and a
            single field left too long is cut with ``…``, uncoloured.
        prefix: a plain note shown first (``ingestd:`` and why, when the input was not sound).
    """
    parts = _parts(f, fields, now, zone)
    if prefix:
        parts.insert(0, (_clean(prefix), _clean(prefix)))
    if not parts:
        parts = [("ingestd", "ingestd")]
    if columns is not None and columns > 0:
        while len(parts) > 1 and len(SEP.join(p for p, _ in parts)) > columns:
            parts.pop()
        if len(parts[0][0]) > columns:
            cut = parts[0][0][: max(columns - 1, 0)] + "…"
            return cut[:columns]
    if not color:
        return SEP.join(p for p, _ in parts)
    return f"{_DIM}{SEP}{_RESET}".join(c for _, c in parts)
