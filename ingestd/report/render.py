"""Terminal rendering of the report documents with rich (tables and trees).

Takes the same documents ``--json`` prints, so the two outputs cannot disagree. Money is rounded
for people here (exact in JSON); usage with no price is marked, never shown as $0.
"""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from rich.console import Console
from rich.text import Text

from ingestd.core.timefmt import parse
from ingestd.report.activity import session_name
from ingestd.report.layout import Cell, Col, build, fit, fits, hidden_note, stacked
from ingestd.report.printable import printable
from ingestd.report.short import cut, cut_start, hang, short_ids, short_models, unique_suffixes
from ingestd.report.window import Zone
from ingestd.report.words import plural

STATUS_STYLE = {
    "working": "green",
    "waiting": "cyan",
    "completed": "dim",
    "error": "red",
    "unknown": "yellow",
}


def usd(doc: dict[str, Any]) -> Text:
    """The cost of a usage document for people: ``$1.23``, ``$0.0042``, ``$1.23+?`` or ``unpriced``."""
    value = Decimal(doc["cost_usd"])
    complete = bool(doc["cost_complete"])
    if value == 0 and not complete:
        return Text("unpriced", style="yellow")
    if Decimal(0) < value < Decimal("0.0001"):
        text = Text("<$0.0001")
    else:
        places = Decimal("0.01") if value >= Decimal("0.01") or value == 0 else Decimal("0.0001")
        text = Text(f"${value.quantize(places, rounding=ROUND_HALF_EVEN):,}")
    if not complete:
        text.append("+?", style="bold yellow")
    return text


def skipped_line(doc: dict[str, Any]) -> str:
    """``3 (not_json 2, not_object 1)``: the total, then the same lines by reason."""
    n, by_reason = doc["lines"], doc["by_reason"]
    if not n:
        return "none"
    parts = [f"{k} {v}" for k, v in by_reason.items()]
    if (rest := n - sum(by_reason.values())) > 0:
        parts.append(f"reason not recorded {rest}")
    return f"{plural(n, 'line')} (by reason: {', '.join(parts)})"


def tokens(n: int) -> str:
    """A token count for people, at most 5 cells: ``950``, ``7.4k``, ``251k``, ``4.56M``, ``63.7M``, ``1.20B``.

    Three significant digits (two below 10k); ``--json`` has the exact counts.
    """
    if n < 1000:
        return str(n)
    for div, suffix in ((10**3, "k"), (10**6, "M"), (10**9, "B")):
        v = n / div
        if suffix == "k":
            text = f"{v:.1f}" if round(v, 1) < 100 else f"{v:.0f}"
        else:
            text = f"{v:.2f}" if round(v, 2) < 10 else f"{v:.1f}" if round(v, 1) < 100 else f"{v:.0f}"
        if float(text) < 1000 or suffix == "B":
            return text + suffix
    return str(n)


def when(value: str | None, zone: Zone, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """A canonical UTC instant as local ``YYYY-MM-DD HH:MM`` in ``zone`` ("-" when unknown)."""
    dt = parse(value) if value else None
    return "-" if dt is None else dt.astimezone(zone.tz).strftime(fmt)


def short_path(path: str | None, home: str | None, width: int = 40) -> str:
    """A project path for a narrow column: ``~`` for the home directory, then ``…/last/two``."""
    if not path:
        return "-"
    p = path
    if home and (p == home or p.startswith(home.rstrip("/") + "/")):
        p = "~" + p[len(home.rstrip("/")) :]
    if len(p) <= width:
        return p
    sep = "\\" if "\\" in p and "/" not in p else "/"
    parts = [x for x in re.split(r"[\\/]", p) if x]
    for n in (2, 1):
        tail = sep.join(parts[-n:])
        if len(tail) + 2 <= width:
            return "…" + sep + tail
    # Too narrow even for the last name: its beginning is what people recognise.
    return parts[-1][: max(1, width - 1)] + "…" if parts else p[: max(1, width)]


def _status(status: str | None) -> Text:
    return Text(status or "-", style=STATUS_STYLE.get(status or "", ""))


# What each reason an amount is unpriced needs (``Usage.reasons``), as a fix the operator can type
# (``{cmd}``: the ``pricing set`` that reaches where the report was read).
_FIXES = {
    "no_rate": "no price row; add one with `{cmd}` ({m} --effective-from DATE --input USD ...)",
    "long_context": "prompts over the long-context threshold, no tier rate: `{cmd} {m} ... --long-context BUCKET=USD`",
    "web_search": "web searches with no per-search fee: `{cmd} {m} ... --web-search-fee USD`",
}


def unpriced_fix(model: str, reason: str, *, store: bool = False) -> str:
    """The fix for one reason ``model``'s usage is unpriced (``no_rate``, ``long_context``,
    ``speed:<s>``, ``geo:<g>``, ``web_search``), naming ``pricing set --store URL`` for a report read from the
    central store (``store``); an unknown reason is named as it is. Pure."""
    cmd = "ingestd pricing set --store URL" if store else "ingestd pricing set"
    if reason.startswith("speed:"):
        speed = reason.split(":", 1)[1]
        return f"speed {speed!r} has no multiplier: `{cmd} {model} ... --speed {speed}=X`"
    if reason.startswith("geo:"):
        geo = reason.split(":", 1)[1]
        return f"inference_geo {geo!r} has no multiplier: `{cmd} {model} ... --geo {geo}=X`"
    fix = _FIXES.get(reason)
    return reason if fix is None else fix.format(cmd=cmd, m=model)


def unpriced_note(console: Console, doc: dict[str, Any], *, store: bool = False) -> None:
    """One line per unpriced model of a usage document: what is unpriced (``N tokens in M messages``,
    ``K web searches``) and, per reason (``unpriced.reasons``), why and the ``pricing set`` that fixes
    it where the report was read (``store``: the central store)."""
    for model, u in doc["unpriced"].items():
        what = []
        if u["tokens"] or not u.get("web_search_requests"):
            n = f"{tokens(u['tokens'])} {'token' if u['tokens'] == 1 else 'tokens'}"
            what.append(f"{n} in {plural(u['messages'], 'message')}")
        if u.get("web_search_requests"):
            what.append(plural(u["web_search_requests"], "web search", "web searches"))
        why = "; ".join(unpriced_fix(model, r, store=store) for r in u.get("reasons") or ["no_rate"])
        console.print(Text(f"+? unpriced: {model}: {' and '.join(what)} ({why})", style="yellow"))
    uncounted = doc.get("uncounted") or {}
    if uncounted.get("records"):
        n = plural(uncounted["records"], "record")
        why = "; ".join(uncounted.get("reasons") or ())
        line = f"+? not counted: {n} with usage no bucket holds ({why}; `ingestd status --verbose` lists them)"
        console.print(Text(line, style="yellow"))
    unread = doc.get("unread") or {}
    if unread.get("bytes"):
        files = ", ".join(f"{f['file']} {plural(f['bytes'], 'byte')}" for f in unread.get("listed") or ())
        more = unread["files"] - len(unread.get("listed") or ())
        files += f" and {plural(more, 'more file')}" if more > 0 else ""
        line = f"+? not read yet: {plural(unread['bytes'], 'byte')} of a last line without its newline ({files})"
        console.print(Text(line, style="yellow"))


def print_table(console: Console, title: str, cols: list[Col], steps: list[str]) -> None:
    """The table fitted to the console; when even its key columns cannot share a line, one block
    per row (``layout.stacked``), which drops and cuts nothing."""
    console.print(Text(title, style="italic"))
    kept, _ = fit(console.width, cols, steps)
    if not fits(console.width, kept):
        for line in stacked(console.width, cols):
            console.print(line)
        return
    table, hidden = build(console.width, cols, steps)
    console.print(table)
    note = hidden_note(hidden, console.width)
    if note is not None:
        console.print(note)


def _times(values: list[str | None], zone: Zone) -> tuple[list[str], list[str], str]:
    """Full ``YYYY-MM-DD HH:MM`` cells, a one-line compact form, and the year the compact form omits.

    The compact form is ``MM-DD HH:MM`` when every time shown falls in one year (named in the
    table's title), else the date alone.
    """
    full = [when(v, zone) for v in values]
    years = {f[:4] for f in full if f != "-"}
    if len(years) == 1:
        return full, [f[5:] if f != "-" else f for f in full], years.pop()
    return full, [when(v, zone, "%Y-%m-%d") for v in values], ""


def _title(row: dict[str, Any]) -> Text:
    """The session's name (``activity.session_name``): its title; else its slug (dim, as Claude
    Code names it); else its first prompt (dim, in quotes); else ``-``."""
    name, source = session_name(row)
    if name is None:
        return Text("-", style="dim")
    text = " ".join(name.split())
    if source == "title":
        return Text(text)
    return Text(f"“{text}”" if source == "first_prompt" else text, style="dim")


def _project_col(head: str, paths: list[str | None], footer: Cell = "", min_width: int = 8) -> Col:
    """Project paths as their shortest unique suffix (``short.unique_suffixes``), elided at the start."""
    names = unique_suffixes(paths)
    cells: list[Cell] = [names.get(p, "-") if p else "-" for p in paths]
    return Col(head, cells, footer=footer, elide=cut_start, min_width=min_width)


def render_sessions(
    console: Console, doc: dict[str, Any], zone: Zone, home: str | None, *, store: bool = False
) -> None:
    """One line per session at 80 columns: project (shortest unique suffix), id prefix, title (elided
    to the room left), last activity, status, agents, tokens, cost. Narrower, the times go to one-line
    compact forms, then started, agents and status give way (named in a note); never the id prefix,
    the title, tokens or cost. Below what those need, one block per session."""
    doc = printable(doc)  # text from transcripts never drives the terminal
    rows = doc["rows"]
    unpriced: dict[str, dict[str, Any]] = {}
    for r in rows:
        for m, u in r["unpriced"].items():
            acc = unpriced.setdefault(m, {"tokens": 0, "messages": 0, "web_search_requests": 0, "reasons": set()})
            acc["tokens"] += u["tokens"]
            acc["messages"] += u["messages"]
            acc["web_search_requests"] += u.get("web_search_requests", 0)
            acc["reasons"].update(u.get("reasons", ()))
    for acc in unpriced.values():
        acc["reasons"] = sorted(acc["reasons"])
    started, started_c, y1 = _times([r["started_at"] for r in rows], zone)
    last, last_c, y2 = _times([r["last_activity_at"] for r in rows], zone)
    titles: list[Cell] = [_title(r) for r in rows]
    cols = [
        _project_col("project", [r["project_path"] for r in rows]),
        Col("session", [r["session_id"][:8] for r in rows], key=True),
        Col("title", titles, elide=cut, min_width=16),
        Col("started", started, compact=started_c),  # type: ignore[arg-type]
        Col("last activity", last, compact=last_c, compact_head="last active"),  # type: ignore[arg-type]
        Col("status", [_status(r["status"]) for r in rows]),
        Col("agents", [str(r["agents"]) for r in rows], justify="right"),
        Col("tokens", [tokens(r["tokens"]) for r in rows], justify="right", key=True),
        Col("cost", [usd(r) for r in rows], justify="right", key=True),
    ]
    steps = ["started", "last activity", "started", "agents", "status", "last activity", "project"]
    n, count = len(rows), doc.get("matched", doc["count"])
    year = y1 if y1 and y1 == y2 else ""
    what = plural(count, "session") if n == count else f"newest {n} of {plural(count, 'session')}"
    more = "" if n == count else "; --all shows all"
    print_table(console, f"{what} (times in {zone.name}{', ' + year if year else ''}{more})", cols, steps)
    window = doc.get("window") or {}
    if window.get("since") or window.get("until"):
        # the window picks the sessions; their tokens and cost are each one's whole life
        note = (
            "tokens and cost: each session's whole life, not only the window"
            " (`ingestd cost --since ...` counts the window)"
        )
        for line in hang("", note, console.width, "  "):
            console.print(Text(line, style="dim"), no_wrap=True, crop=True)
    unpriced_note(console, {"unpriced": unpriced}, store=store)


# (JSON key, name in steps and notes, header as shown: two lines keep the columns narrow)
_BUCKET_HEADS = (
    ("input", "input", "input"),
    ("output", "output", "output"),
    ("cache_read", "c.read", "cache\nread"),
    ("cache_write_5m", "c.wr 5m", "cache\nwr 5m"),
    ("cache_write_1h", "c.wr 1h", "cache\nwr 1h"),
)


def _agent_ids(rows: list[dict[str, Any]]) -> list[str]:
    """The id cells of ``cost --by agent``: ``main`` for a session's main agent (its session is
    beside it), other ids as their shortest unique prefix (``short.short_ids``)."""
    subs = short_ids(r["agent_id"] for r in rows if r["agent_id"] and r["agent_id"] != r["session_id"])
    return ["main" if r["agent_id"] == r["session_id"] else subs.get(r["agent_id"] or "", "-") for r in rows]


def _cost_label_cols(by: str | None, rows: list[dict[str, Any]]) -> list[Col]:
    """The columns that name a cost row (the key of the grouping), ``total`` in the footer."""
    if by is not None and "," in by:
        first, second = (_cost_label_cols(level, rows) for level in by.split(","))
        return [*first, *(replace(c, footer="") for c in second)]
    if by == "model":
        names = short_models(r["model"] for r in rows)
        return [
            Col(
                "model",
                [r["model"] for r in rows],
                footer="total",
                key=True,
                compact=[names.get(r["model"], r["model"]) for r in rows],
                compact_head="model",
            )
        ]
    if by in ("day", "week", "month", "host"):
        field = {"host": "host_id"}.get(by, by)
        return [Col(by, [r[field] for r in rows], footer="total", key=True)]
    if by == "project":
        return [replace(_project_col("project", [r["project_path"] for r in rows], "total"), key=True)]
    if by == "session":
        return [
            Col("session", [r["session_id"][:8] for r in rows], footer="total", key=True),
            _project_col("project", [r["project_path"] for r in rows]),
        ]
    if by == "agent":
        return [
            Col("agent", [r["subagent_type"] or r["agent_type"] or "(no agent)" for r in rows], footer="total"),
            Col("id", _agent_ids(rows), key=True),  # type: ignore[arg-type]
            Col("session", [r["session_id"][:8] for r in rows], key=True),
        ]
    return [Col(by or "", [r["key"] for r in rows], footer="total", key=True)]


def render_cost(console: Console, doc: dict[str, Any], home: str | None, *, store: bool = False) -> None:
    """Grouped rows (when any) and the total, bucket by bucket, with unpriced usage beside it.

    Every bucket with tokens is a column that never gives way (a bucket with none in the whole
    answer is left out and named); on a narrow terminal the message count, the agent type and the
    project give way first, and below what the rest needs each row becomes a block. Without
    ``--by`` the total is the one row (no empty body).
    """
    doc = printable(doc)  # text from transcripts never drives the terminal
    by = doc["by"]
    w = doc["window"]
    span = f"{w['since'] or 'beginning'} → {w['until'] or 'now'}"
    title = f"cost by {by}" if by else "cost"
    grouped = by is not None
    rows = doc["rows"] if grouped else [{**doc, "key": "total"}]
    cols = _cost_label_cols(by, rows)
    if not grouped:
        cols[0] = replace(cols[0], footer="")
    empty = [name for k, name, _ in _BUCKET_HEADS if not doc["totals"][k]]
    for k, name, head in _BUCKET_HEADS:
        if name in empty:
            continue
        cells: list[Cell] = [tokens(r["totals"][k]) for r in rows]
        footer = tokens(doc["totals"][k]) if grouped else ""
        cols.append(Col(name, cells, justify="right", footer=footer, key=True, shown_head=head))
    foot = grouped
    cols += [
        Col(
            "tokens",
            [tokens(r["tokens"]) for r in rows],
            justify="right",
            footer=tokens(doc["tokens"]) if foot else "",
            key=True,
        ),
        Col(
            "msgs",
            [str(r["billed_messages"]) for r in rows],
            justify="right",
            footer=str(doc["billed_messages"]) if foot else "",
        ),
        Col("cost", [usd(r) for r in rows], justify="right", footer=usd(doc) if foot else "", key=True),
    ]
    steps = ["msgs", "model", "agent", "project"]
    print_table(console, f"{title}  ({span}; days in {doc['tz']})", cols, steps)
    if empty:
        console.print(Text(f"(no tokens in: {', '.join(empty)})", style="dim"))
    if doc["source"] != "token_usage_rollup":
        why = "the rollup has no agent column" if by == "agent" else "the rollup does not tell sources apart"
        console.print(Text(f"(read from {doc['source']}: {why})", style="dim"))
    if "telemetry" in doc:
        telemetry_note(console, doc["telemetry"])
    unpriced_note(console, doc, store=store)


def telemetry_note(console: Console, t: dict[str, Any]) -> None:
    """Claude Code's own telemetry beside the exact figures (``cost_report``'s ``telemetry``): its
    events, how many a transcript explains and how many of those disagree, its own cost and its
    metrics, never added to the totals above."""
    if not t["events"] and not t["metrics"]:
        console.print(
            Text("(no telemetry from Claude Code: `ingestd hooks install --otel` sends it here)", style="dim")
        )
        return
    cc = t["claude_code_cost_usd"]
    own = f"Claude Code's own cost ${cc:.6f}" if cc is not None else "no cost of its own"
    line = (
        f"telemetry: {t['events']} api requests, {t['matched']} explained by a transcript"
        f" ({t['disagreements']} disagree), {t['otel_only']} in telemetry only"
        f" ({t['split_unknown']} without a 5m/1h split), {t['errors']} errors; {own}"
    )
    console.print(Text(line, style="dim"))
    for name, m in t["metrics"].items():
        note = f"  metric {name}: {m['sum']:g} {m['unit']} ({m['points']} points; shown, never added)"
        console.print(Text(note, style="dim"))


def _from_utc(instant: str) -> str:
    """``2025-11-01`` for midnight UTC (how rates are usually dated), else the instant in full
    (``2025-11-01 09:30:00``, ``2025-11-01 09:30:15.250``): two rows a minute apart, or a second,
    must not look the same."""
    day, _, rest = instant.partition("T")
    if rest.startswith("00:00:00.000"):
        return day
    rest = rest.rstrip("Z")
    return f"{day} {rest[:-4] if rest.endswith('.000') else rest}"


def render_prices(console: Console, rows: list[dict[str, Any]]) -> None:
    """Price rows (``PriceRow.to_json`` documents): model ids, buckets and rates are never cut;
    each row names its source by number, the sources listed whole under the table (they are
    long and few); the other dimensions (long-context tier, speed, web-search fee) give way last."""
    rows = printable(rows)  # text from transcripts never drives the terminal
    sources: dict[str, int] = {}
    for r in rows:
        sources.setdefault(r["source"], len(sources) + 1)
    cols = [
        Col("model", [r["model"] for r in rows], key=True),
        Col("bucket", [r["bucket"] for r in rows], key=True),
        Col("$/MTok", [r["usd_per_mtok"] for r in rows], justify="right", key=True),
        Col("from (UTC)", [_from_utc(r["effective_from"]) for r in rows]),
        Col("src", [str(sources[r["source"]]) for r in rows], justify="right"),
    ]
    extra: list[Cell] = [_dimensions(r) for r in rows]
    if any(extra):
        # SPEC §5.1 price dimensions (long-context tier, speed multipliers, server tool fee)
        cols.insert(4, Col("also", extra, elide=cut, min_width=9))
    print_table(console, plural(len(rows), "price row"), cols, ["src", "from (UTC)", "also"])
    for text, n in sources.items():
        for line in hang(f"{n:>3}  ", text, console.width):
            console.print(Text(line, style="dim"), no_wrap=True, crop=True)


def _dimensions(r: dict[str, Any]) -> str:
    """``>200k 6.0``, ``fast x6``, ``geo us x1.1``, ``web $0.01``: the row's other dimensions, in few cells."""
    parts = []
    if r.get("long_context_threshold") is not None:
        parts.append(f">{tokens(int(r['long_context_threshold']))} {r['long_context_usd_per_mtok']}")
    parts += [f"{k} x{v}" for k, v in (r.get("speed_multipliers") or {}).items()]
    parts += [f"geo {k} x{v}" for k, v in (r.get("geo_multipliers") or {}).items()]
    if r.get("web_search_usd_per_request") is not None:
        parts.append(f"web ${r['web_search_usd_per_request']}")
    return ", ".join(parts)
