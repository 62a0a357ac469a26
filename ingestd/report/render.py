"""Terminal rendering of the report documents with rich (tables and trees).

Takes the same documents ``--json`` prints, so the two outputs cannot disagree. Money is rounded
for people here (exact in JSON); usage with no price is marked, never shown as $0.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ingestd.core.timefmt import parse
from ingestd.report.layout import Cell, Col, build, hidden_note
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


def _skipped(doc: dict[str, Any]) -> str:
    """``3 (not_json 2, not_object 1)``: the total, then the same lines by reason."""
    n, by_reason = doc["lines"], doc["by_reason"]
    if not n:
        return "none"
    parts = [f"{k} {v}" for k, v in by_reason.items()]
    if (rest := n - sum(by_reason.values())) > 0:
        parts.append(f"reason not recorded {rest}")
    return f"{plural(n, 'line')} (by reason: {', '.join(parts)})"


def tokens(n: int) -> str:
    """A token count for people: ``950``, ``12.3k``, ``4.56M``, ``1.20B``."""
    if n < 1000:
        return str(n)
    for limit, suffix, div in ((10**6, "k", 10**3), (10**9, "M", 10**6), (10**30, "B", 10**9)):
        if n < limit:
            return f"{n / div:.1f}{suffix}" if suffix == "k" else f"{n / div:.2f}{suffix}"
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


def _unpriced_note(console: Console, doc: dict[str, Any]) -> None:
    for model, u in doc["unpriced"].items():
        console.print(
            Text(
                f"+? unpriced: {model}: {tokens(u['tokens'])} {'token' if u['tokens'] == 1 else 'tokens'}"
                f" in {plural(u['messages'], 'message')}"
                " (no price row; add one with `ingestd pricing set`)",
                style="yellow",
            )
        )


def _path_col(head: str, cells: list[Cell], footer: Cell = "", min_width: int = 10) -> Col:
    """A project path column: elided (``…/last/two``) to the room left, down to ``min_width`` cells."""
    return Col(head, cells, footer=footer, elide=lambda p, w: short_path(p, None, w), min_width=min_width)


def _print_table(console: Console, title: str, cols: list[Col], steps: list[str]) -> None:
    console.print(Text(title, style="italic"))
    table, hidden = build(console.width, cols, steps)
    console.print(table)
    note = hidden_note(hidden, console.width)
    if note is not None:
        console.print(note)


def render_sessions(console: Console, doc: dict[str, Any], zone: Zone, home: str | None) -> None:
    """One table row per session; on a narrow terminal the times wrap (date over time), then
    agents, started, status and last activity give way, never the id prefix, tokens or cost."""
    rows = doc["rows"]
    unpriced: dict[str, dict[str, int]] = {}
    for r in rows:
        for m, u in r["unpriced"].items():
            acc = unpriced.setdefault(m, {"tokens": 0, "messages": 0})
            acc["tokens"] += u["tokens"]
            acc["messages"] += u["messages"]
    two_lines = "%Y-%m-%d\n%H:%M"
    cols = [
        # The project gives way first (down to 8 cells) so that 80 columns keep every column.
        _path_col("project", [short_path(r["project_path"], home, 1000) for r in rows], min_width=8),
        Col("session", [r["session_id"][:8] for r in rows], key=True),
        Col(
            "started",
            [when(r["started_at"], zone) for r in rows],
            compact=[when(r["started_at"], zone, two_lines) for r in rows],
        ),
        Col(
            "last activity",
            [when(r["last_activity_at"], zone) for r in rows],
            compact=[when(r["last_activity_at"], zone, two_lines) for r in rows],
            compact_head="last\nactivity",
        ),
        Col("status", [_status(r["status"]) for r in rows]),
        Col("agents", [str(r["agents"]) for r in rows], justify="right"),
        Col("tokens", [tokens(r["tokens"]) for r in rows], justify="right", key=True),
        Col("cost", [usd(r) for r in rows], justify="right", key=True),
    ]
    steps = ["started", "last activity", "agents", "started", "status", "last activity", "project"]
    _print_table(console, f"{plural(doc['count'], 'session')} (times in {zone.name})", cols, steps)
    _unpriced_note(console, {"unpriced": unpriced})


def _label(node: dict[str, Any], zone: Zone) -> Text:
    t = Text()
    name = "main" if node["type"] == "main" else (node["subagent_type"] or "subagent")
    t.append(name, style="bold")
    t.append(f" {node['agent_id']} ", style="dim")
    t.append_text(_status(node["status"]))
    if node["outcome_cause"]:
        t.append(f" ({node['outcome_cause']})", style="red")
    if node["orphan_reason"]:
        t.append(f"  ORPHAN: {node['orphan_reason'].replace('_', ' ')}", style="bold magenta")
    if node["edge"]:
        t.append(f"  via {node['edge']['source']}", style="blue")
    t.append(f"\n{when(node['first_seen_at'], zone)} → {when(node['last_seen_at'], zone)}", style="dim")
    own, sub = node["own"], node["subtree"]
    t.append(f"  own {tokens(own['tokens'])} tok ")
    t.append_text(usd(own))
    if node["children"]:
        t.append(f"  subtree {tokens(sub['tokens'])} tok ")
        t.append_text(usd(sub))
    tc = node["tool_calls"]
    if tc["total"]:
        top = ", ".join(f"{k} {v}" for k, v in sorted(tc["by_tool"].items(), key=lambda kv: (-kv[1], kv[0]))[:4])
        failed = sum(v for k, v in tc["by_status"].items() if k != "completed")
        t.append(f"  tools {tc['total']} ({top})" + (f", {failed} not completed" if failed else ""), style="dim")
    return t


def _grow(branch: Tree, node: dict[str, Any], zone: Zone) -> None:
    sub = branch.add(_label(node, zone))
    for child in node["children"]:
        _grow(sub, child, zone)


def render_tree(console: Console, doc: dict[str, Any], zone: Zone, home: str | None) -> None:
    """The agent tree, then orphans and compaction sidechains under the session."""
    s = doc["session"]
    head = Text(f"session {s['session_id']}  ", style="bold")
    head.append(short_path(s["project_path"], home, 60))
    head.append("  ")
    head.append_text(_status(s["status"]))
    head.append(f"  {plural(doc['agents'], 'agent')}  {tokens(s['tokens'])} tok ")
    head.append_text(usd(s))
    root = Tree(head)
    if doc["tree"] is not None:
        _grow(root, doc["tree"], zone)
    if doc["orphans"]:
        o = root.add(Text("orphans (no parent evidence; a parent is never invented)", style="bold magenta"))
        for node in doc["orphans"]:
            _grow(o, node, zone)
    if doc["compaction_agents"]:
        c = root.add(Text("compaction sidechains (cost belongs to the session)", style="dim"))
        for node in doc["compaction_agents"]:
            _grow(c, node, zone)
    if doc["unattributed"]:
        u = Text(f"usage with no agent: {tokens(doc['unattributed']['tokens'])} tok ", style="dim")
        u.append_text(usd(doc["unattributed"]))
        root.add(u)
    console.print(root)
    _unpriced_note(console, s)


_BUCKET_HEADS = (
    ("input", "input"),
    ("output", "output"),
    ("cache_read", "c.read"),
    ("cache_write_5m", "c.wr 5m"),
    ("cache_write_1h", "c.wr 1h"),
)


def _cost_label_cols(by: str | None, rows: list[dict[str, Any]], home: str | None) -> list[Col]:
    """The columns that name a cost row (the key of the grouping), ``total`` in the footer."""
    if by == "project":
        col = _path_col("project", [short_path(r["project_path"], home, 1000) for r in rows], "total")
        return [replace(col, key=True)]
    if by == "session":
        return [
            Col("session", [r["session_id"][:8] for r in rows], footer="total", key=True),
            _path_col("project", [short_path(r["project_path"], home, 1000) for r in rows]),
        ]
    if by == "agent":
        ids = [(r["agent_id"] or "-") if r["agent_id"] != r["session_id"] else r["session_id"][:8] for r in rows]
        return [
            Col("agent", [r["subagent_type"] or r["agent_type"] or "(no agent)" for r in rows], footer="total"),
            Col("id", ids, key=True),
            Col("session", [r["session_id"][:8] for r in rows], key=True),
        ]
    return [Col(by or "", [r["key"] for r in rows], footer="total", key=True)]


def render_cost(console: Console, doc: dict[str, Any], home: str | None) -> None:
    """Grouped rows (when any) and the total, bucket by bucket, with unpriced usage beside it.

    On a narrow terminal the message count, then the buckets (cache first) give way; the row's
    name (model ids in full), the token total and the cost never do.
    """
    by = doc["by"]
    w = doc["window"]
    span = f"{w['since'] or 'beginning'} → {w['until'] or 'now'}"
    title = f"cost by {by}" if by else "cost"
    rows = doc["rows"]
    cols = _cost_label_cols(by, rows, home)
    for k, head in _BUCKET_HEADS:
        cells: list[Cell] = [tokens(r["totals"][k]) for r in rows]
        cols.append(Col(head, cells, justify="right", footer=tokens(doc["totals"][k])))
    cols += [
        Col("tokens", [tokens(r["tokens"]) for r in rows], justify="right", footer=tokens(doc["tokens"]), key=True),
        Col("msgs", [str(r["billed_messages"]) for r in rows], justify="right", footer=str(doc["billed_messages"])),
        Col("cost", [usd(r) for r in rows], justify="right", footer=usd(doc), key=True),
    ]
    steps = ["msgs", *(h for _, h in reversed(_BUCKET_HEADS)), "project", "agent"]
    _print_table(console, f"{title}  ({span}; days in {doc['tz']})", cols, steps)
    if doc["source"] != "token_usage_rollup":
        console.print(Text(f"(read from {doc['source']}: the rollup has no agent column)", style="dim"))
    _unpriced_note(console, doc)


def _ago(value: str | None, now: datetime) -> str:
    dt = parse(value) if value else None
    if dt is None:
        return "never"
    s = int((now.astimezone(UTC) - dt).total_seconds())
    if s < 120:
        return f"{value} ({s}s ago)"
    if s < 7200:
        return f"{value} ({s // 60}m ago)"
    if s < 172800:
        return f"{value} ({s // 3600}h ago)"
    return f"{value} ({s // 86400}d ago)"


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def render_status(console: Console, doc: dict[str, Any]) -> None:
    """Health as a two-column table, then row counts."""
    now = parse(doc["now"]) or datetime.now(UTC)
    t = Table(show_header=False, title="ingestd status", title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    sc = doc["schema"]
    t.add_row("schema", f"{sc['version']} ({sc['name']})" if sc["version"] is not None else "none")
    db = doc["database"]
    t.add_row("database", f"{db['path'] or '-'}  {_size(db['size_bytes'])} (+ WAL {_size(db['wal_bytes'])})")
    host = doc.get("host") or {}
    t.add_row(
        "host",
        f"{host.get('host_id') or '(not yet chosen)'}; shipped through log id {host.get('shipped_through', 0)}, "
        f"{plural(host.get('unshipped_rows', 0), 'row')} not shipped",
    )
    sess = doc["sessions"]
    t.add_row(
        "sessions",
        f"{sess['active']} active now; " + ", ".join(f"{k} {v}" for k, v in sess["by_status"].items()),
    )
    t.add_row("agents", ", ".join(f"{k} {v}" for k, v in doc["agents"]["by_status"].items()) or "none")
    t.add_row("last ingest", _ago(doc["last_ingest_at"], now))
    t.add_row("last hook", _ago(doc["last_hook_at"], now))
    tail = doc["tail"]
    lag = f"{plural(tail['files_tracked'], 'file')} tracked"
    if tail["bytes_behind_on_disk"] is not None:
        lag += f"; {_size(tail['bytes_behind_on_disk'])} not yet read in {plural(tail['files_behind_on_disk'], 'file')}"
        if tail["files_missing_on_disk"]:
            lag += f"; {plural(tail['files_missing_on_disk'], 'file')} gone from disk (kept in the log)"
    t.add_row("tail", lag)
    t.add_row("skipped lines", _skipped(doc["skipped"]))
    t.add_row(
        "unpriced models",
        Text(
            ", ".join(
                f"{m} ({tokens(u['tokens'])} tok, {plural(u['messages'], 'message')})"
                for m, u in doc["unpriced"].items()
            )
        )
        if doc["unpriced"]
        else Text("none"),
    )
    p = doc["last_prune"]
    t.add_row("last prune", "never" if p is None else f"{p['ran_at']}: {plural(p['rows'], 'row')} of {p['target']}")
    t.add_row("last backup", _ago(doc["backup"]["last_backup_at"], now))
    console.print(t)
    rows = Table("table", "rows", title="rows per table", title_justify="left")
    for name, n in doc["rows"].items():
        rows.add_row(name, f"{n:,}")
    console.print(rows)


def _from_utc(instant: str) -> str:
    """``2025-11-01`` for midnight UTC (how rates are usually dated), else ``2025-11-01 09:30``."""
    day, _, rest = instant.partition("T")
    return day if rest.startswith("00:00:00.000") else f"{day} {rest[:5]}"


def render_prices(console: Console, rows: list[dict[str, Any]]) -> None:
    """Price rows (``PriceRow.to_json`` documents): model ids, buckets and rates are never cut;
    the source is shortened, then the source and the date give way on a narrow terminal."""
    cols = [
        Col("model", [r["model"] for r in rows], key=True),
        Col("bucket", [r["bucket"] for r in rows], key=True),
        Col("USD/MTok", [r["usd_per_mtok"] for r in rows], justify="right", key=True),
        Col("from (UTC)", [_from_utc(r["effective_from"]) for r in rows]),
        Col("source", [r["source"] for r in rows], elide=lambda s, w: s[: max(1, w - 1)] + "…", min_width=12),
    ]
    _print_table(console, plural(len(rows), "price row"), cols, ["source", "from (UTC)"])
