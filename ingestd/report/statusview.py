"""Terminal rendering of ``ingestd status`` (``ingestd.report.status``'s document) with rich.

Takes the document ``--json`` prints, so the two outputs cannot disagree; split from
``ingestd.report.render`` (the other reports), whose helpers it shares.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ingestd.core.timefmt import parse
from ingestd.report.printable import printable
from ingestd.report.render import skipped_line, tokens
from ingestd.report.status import clock_warnings
from ingestd.report.words import plural


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


def _uptime(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    d, rem = divmod(s, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    return f"{d}d {h}h" if d else f"{h}h {m}m" if h else f"{m}m {sec}s"


def _daemon(doc: dict[str, Any] | None) -> Text:
    """``running: pid 123 on 127.0.0.1:7391, up 2h 5m, ingestd 0.1.0`` or why it is not."""
    if doc is None:
        return Text("not checked")
    if doc["running"]:
        t = Text(doc["state"], style="green" if doc["state"] == "running" else "red")
        t.append(f": pid {doc['pid']} on {doc['address']}, up {_uptime(doc['uptime_s'])}, ingestd {doc['version']}")
        if doc["problem"]:
            t.append(f"; {doc['problem']}", style="red")
        return t
    words = {"not_responding": "not responding", "stopped": "not running", "never_started": "not running"}
    t = Text(words.get(doc["state"], doc["state"]), style="bold red")
    if doc["problem"]:
        t.append(f": {doc['problem']}")
    if doc["state"] != "never_started":
        t.append(f" (last started {doc['started_at']}" + (f", pid {doc['pid']})" if doc["pid"] else ")"))
    t.append("; start it: `ingestd service install` or `ingestd serve`", style="dim")
    return t


def render_status(console: Console, doc: dict[str, Any]) -> None:
    """Health as a two-column table, then row counts. With the daemon down, the statuses are
    labelled ``as of <time>, daemon not running``: nothing has updated them since."""
    doc = printable(doc)  # text from transcripts never drives the terminal
    t = Table(show_header=False, title="ingestd status", title_justify="left")
    t.add_column(style="bold")
    t.add_column()
    for head, cell in _store_rows(doc) + _activity_rows(doc):
        t.add_row(head, cell)
    console.print(t)
    render_quarantine(console, doc.get("quarantine"))
    rows = Table("table", "rows", title="rows per table", title_justify="left")
    for name, n in doc["rows"].items():
        rows.add_row(name, f"{n:,}")
    console.print(rows)


Row = tuple[str, str | Text]


def _host_line(host: dict[str, Any]) -> str:
    """The host id, and its shipping only in team mode (a ``ship_to`` set, or shipped before)."""
    name = host.get("host_id") or "(not yet chosen)"
    if not host.get("team_mode", True):
        return name
    return (
        f"{name}; shipped through log id {host.get('shipped_through', 0)}, "
        f"{plural(host.get('unshipped_rows', 0), 'row')} not shipped"
    )


def _store_rows(doc: dict[str, Any]) -> list[Row]:
    """The daemon, the schema, the database file, this host, sessions and agents."""
    stale = "" if doc.get("live", True) else f" (as of {doc.get('as_of') or 'never'}, daemon not running)"
    sc = doc["schema"]
    db = doc["database"]
    host = doc.get("host") or {}
    sess = doc["sessions"]
    active = "active now" if not stale else "active"
    by_status = ", ".join(f"{k} {v}" for k, v in sess["by_status"].items())
    return [
        ("daemon", _daemon(doc.get("daemon"))),
        ("schema", f"{sc['version']} ({sc['name']})" if sc["version"] is not None else "none"),
        ("database", f"{db['path'] or '-'}  {_size(db['size_bytes'])} (+ WAL {_size(db['wal_bytes'])})"),
        ("host", _host_line(host)),
        ("sessions", Text(f"{sess['active']} {active}; " + by_status) + Text(stale, style="yellow")),
        (
            "agents",
            Text(", ".join(f"{k} {v}" for k, v in doc["agents"]["by_status"].items()) or "none")
            + Text(stale, style="yellow"),
        ),
    ]


def _tail_line(tail: dict[str, Any]) -> str:
    # Only files an ingest has reached have a checkpoint: the lag is of those, and says so ("541 B not
    # yet read in 2 files" would hide 23 MB in 226 files no ingest has reached)
    lag = f"{plural(tail['files_tracked'], 'file')} tracked so far"
    if tail["bytes_behind_on_disk"] is not None:
        lag += f"; {_size(tail['bytes_behind_on_disk'])} not yet read in {tail['files_behind_on_disk']} of them"
        if tail["files_missing_on_disk"]:
            lag += f"; {plural(tail['files_missing_on_disk'], 'file')} gone from disk (kept in the log)"
        lag += " (files no ingest has reached yet are not counted)"
    return lag


def _activity_rows(doc: dict[str, Any]) -> list[Row]:
    """The watchdog, the last writes, the tail, skipped and unpriced, retention, stalls."""
    now = parse(doc["now"]) or datetime.now(UTC)
    out: list[Row] = []
    if "watchdog" in doc:
        out.append(("watchdog", f"an agent idle {doc['watchdog']['window_s']} s becomes unknown"))
        out += clock_rows(doc["watchdog"])
    unpriced = ", ".join(
        f"{m} ({tokens(u['tokens'])} tok, {plural(u['messages'], 'message')})" for m, u in doc["unpriced"].items()
    )
    p = doc["last_prune"]
    out += [
        ("last commit", _ago(doc.get("last_commit_at"), now)),
        ("last ingest", _ago(doc["last_ingest_at"], now)),
        ("last hook", _ago(doc["last_hook_at"], now)),
        ("tail", _tail_line(doc["tail"])),
        ("skipped lines", skipped_line(doc["skipped"])),
        ("oversized lines", _oversized_line(doc.get("oversized"))),
        ("unpriced models", Text(unpriced or "none")),
        ("last prune", "never" if p is None else f"{p['ran_at']}: {plural(p['rows'], 'row')} of {p['target']}"),
        ("last backup", _ago(doc["backup"]["last_backup_at"], now)),
    ]
    for st in doc.get("stalls") or []:
        text = f"{st['component']}: retrying for {st['seconds']} s ({st['retries']} retries): {st['reason']}"
        out.append(("stalled", Text(text)))
    return out


def clock_rows(wd: dict[str, Any]) -> list[Row]:
    """Warnings that a clock was wrong (``status.clock_warnings``), one row each, in red."""
    return [("clock", Text(w, style="bold red")) for w in clock_warnings(wd)]


def _oversized_line(oversized: dict[str, Any] | None) -> str:
    """``none`` or ``2 lines (longer than max_line_bytes: ...)``: transcript lines logged as markers."""
    n = (oversized or {}).get("lines", 0)
    if not n:
        return "none"
    return f"{plural(n, 'line')} (longer than max_line_bytes: logged as marker rows)"


def render_quarantine(console: Console, q: dict[str, Any] | None) -> None:
    """The quarantined records of ``status``: counts per reason, then the newest with where they are."""
    if not q or not q["records"]:
        console.print("quarantined records: none")
        return
    counts = ", ".join(f"{k} {v}" for k, v in q["by_reason"].items())
    t = Table(
        "reason",
        "origin",
        "offset",
        "detail",
        title=f"quarantined records: {q['records']} ({counts}); newest {len(q['listed'])}",
        title_justify="left",
    )
    for r in q["listed"]:
        off = r["origin_offset"]
        t.add_row(r["reason"], Text(r["origin"]), "-" if off is None else str(off), Text(r["detail"]))
    console.print(t)
