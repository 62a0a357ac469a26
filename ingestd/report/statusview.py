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
from ingestd.report.claudetotals import totals_line
from ingestd.report.printable import printable
from ingestd.report.render import skipped_line, tokens
from ingestd.report.short import cut_start
from ingestd.report.status import clock_warnings, notices_line
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


def _daemon(doc: dict[str, Any] | None) -> tuple[Text, str | None]:
    """``running: pid 123 on 127.0.0.1:7391, up 2h 5m, ingestd 0.1.0`` or why it is not, and the fix."""
    if doc is None:
        return Text("not checked"), None
    if doc["running"]:
        t = Text(doc["state"], style="green" if doc["state"] == "running" else "red")
        t.append(f": pid {doc['pid']} on {doc['address']}, up {_uptime(doc['uptime_s'])}, ingestd {doc['version']}")
        return t, (None if not doc["problem"] else doc["problem"])
    words = {"not_responding": "not responding", "stopped": "not running", "never_started": "not running"}
    t = Text(words.get(doc["state"], doc["state"]), style="bold red")
    if doc["problem"]:
        t.append(f": {doc['problem']}")
    if doc["state"] != "never_started":
        t.append(f" (last started {doc['started_at']}" + (f", pid {doc['pid']})" if doc["pid"] else ")"))
    return t, "ingestd service install (or ingestd serve)"


LABEL = 17  # "last transcript" and two spaces: the values line up


def render_status(console: Console, doc: dict[str, Any], *, verbose: bool = False) -> None:
    """The answer first (is the daemon running, the last hook and transcript line received, the
    tail lag, each problem with its fix), then the details, one line each within the console's
    width (a longer value is cut: ``--json`` has it whole). ``verbose`` adds the rows per table
    and every listed quarantined record. With the daemon down, the statuses are labelled
    ``as of <time>, daemon not running``: nothing has updated them since."""
    doc = printable(doc)  # text from transcripts never drives the terminal
    width = console.width
    console.print(Text("ingestd status", style="bold"))
    answer = _answer_rows(doc)
    for i, (head, cell) in enumerate(answer + _detail_rows(doc, width)):
        # a problem is read whole, its lines hanging under its value; a detail is cut (--json has it)
        lines = cell.wrap(console, max(10, width - LABEL)) if i < len(answer) else [cell]
        for n, part in enumerate(lines):
            line = Text((head if n == 0 else "").ljust(LABEL), style="bold") + part
            line.truncate(width, overflow="ellipsis")
            console.print(line, no_wrap=True, overflow="ellipsis", crop=True)
    render_quarantine(console, doc.get("quarantine"), listed=None if verbose else QUARANTINE_SHOWN)
    if not verbose:
        console.print(Text("(rows per table: ingestd status --verbose, or --json)", style="dim"))
        return
    rows = Table("table", "rows", title="rows per table", title_justify="left")
    for name, n in doc["rows"].items():
        rows.add_row(name, f"{n:,}")
    console.print(rows)


QUARANTINE_SHOWN = 3  # quarantined records listed without --verbose: the screen keeps the answer


Row = tuple[str, Text]


def _fix(text: str) -> Row:
    return ("", Text("fix: ", style="yellow") + Text(text))


def _answer_rows(doc: dict[str, Any]) -> list[Row]:
    """The daemon, the last hook, the last transcript line, the tail lag, then the problems."""
    now = parse(doc["now"]) or datetime.now(UTC)
    daemon, fix = _daemon(doc.get("daemon"))
    running = bool((doc.get("daemon") or {}).get("running"))
    out: list[Row] = [("daemon", daemon)]
    if fix and running:
        out.append(("", Text(f"problem: {fix}", style="red")))
    elif fix:
        out.append(_fix(fix))
    out.append(("last hook", Text(_ago(doc["last_hook_at"], now))))
    if doc["last_hook_at"] is None:
        out.append(_fix("ingestd hooks install (hooks give live status and prompts)"))
    out.append(("last transcript", Text(_ago(doc["last_ingest_at"], now))))
    tail = doc["tail"]
    out.append(("tail lag", Text(_tail_line(tail))))
    if tail["files_tracked"] and tail["bytes_behind_on_disk"] is not None:
        out.append(("", Text("(files no ingest has reached yet are not counted)", style="dim")))
    if tail.get("bytes_behind_on_disk") and not running:
        out.append(_fix("ingestd ingest (or start the daemon: it reads them as they grow)"))
    problems = _problem_rows(doc)
    if not problems and not any(head == "" for head, _ in out):
        problems.append(("problems", Text("none", style="green")))
    return out + problems


def _problem_rows(doc: dict[str, Any]) -> list[Row]:
    """What else is wrong, each with what to do: a stale projection, stalled writers, clocks,
    skipped lines, unpriced models."""
    out: list[Row] = []
    stale = doc.get("stale_projection")
    if stale:
        out += [
            ("problem", Text("projections are stale", style="red")),
            _fix(str(stale.get("fix") or "ingestd migrate")),
        ]
    for st in doc.get("stalls") or []:
        text = f"{st['component']}: retrying for {st['seconds']} s ({st['retries']} retries): {st['reason']}"
        out.append(("stalled", Text(text, style="red")))
    if "watchdog" in doc:
        out += clock_rows(doc["watchdog"])
    if doc["skipped"]["lines"]:
        out.append(("skipped lines", Text(skipped_line(doc["skipped"]), style="yellow")))
    if doc["unpriced"]:
        unpriced = ", ".join(
            f"{m} ({tokens(u['tokens'])} tok, {plural(u['messages'], 'message')})" for m, u in doc["unpriced"].items()
        )
        out += [("unpriced models", Text(unpriced, style="yellow")), _fix("ingestd pricing set MODEL ... (see cost)")]
    return out


def _host_line(host: dict[str, Any]) -> str:
    """The host id, and its shipping only in team mode (a ``ship_to`` set, or shipped before)."""
    name = host.get("host_id") or "(not yet chosen)"
    if not host.get("team_mode", True):
        return name
    return (
        f"{name}; shipped through log id {host.get('shipped_through', 0)}, "
        f"{plural(host.get('unshipped_rows', 0), 'row')} not shipped"
    )


def _detail_rows(doc: dict[str, Any], width: int) -> list[Row]:
    """Sessions and agents, the database and schema, this host, the last commit, the watchdog,
    oversized lines, retention."""
    now = parse(doc["now"]) or datetime.now(UTC)
    live = doc.get("live", True)
    sc = doc["schema"]
    db = doc["database"]
    sess = doc["sessions"]
    agents = doc["agents"]["by_status"]
    n_sessions = sum(sess["by_status"].values())
    agents_by = ", ".join(f"{k} {v}" for k, v in agents.items())
    by_status = ", ".join(f"{k} {v}" for k, v in sess["by_status"].items())
    active = f"{sess['active']} active now" if live else f"{sess['active']} active"
    schema = f"{sc['version']} ({sc['name']})" if sc["version"] is not None else "none"
    size = f"  {_size(db['size_bytes'])} (+ WAL {_size(db['wal_bytes'])})" + _search(db)
    path = cut_start(db["path"] or "-", max(8, width - LABEL - len(size)))
    p = doc["last_prune"]
    out: list[Row] = [
        ("sessions", Text(f"{n_sessions}, {active}" + (f" ({by_status})" if by_status else ""))),
        ("agents", Text(f"{sum(agents.values())}" + (f" ({agents_by})" if agents else ""))),
    ]
    if (doc.get("notices") or {}).get("unmatched"):  # a row only when there are some: the screen keeps the answer
        out.append(("notices", Text(notices_line(doc.get("notices")))))
    cc = doc.get("claude_totals") or {}
    if cc.get("tokens_differ") or cc.get("cost_differs"):  # likewise: a row only when they disagree
        out.append(("claude", Text(totals_line(cc), style="yellow")))
    if not live:
        out.append(("", Text(f"(as of {doc.get('as_of') or 'never'}, daemon not running)", style="yellow")))
    out += [
        ("database", Text(path + size)),
        ("schema", Text(schema)),
        ("host", Text(_host_line(doc.get("host") or {}))),
        ("last commit", Text(_ago(doc.get("last_commit_at"), now))),
    ]
    if "watchdog" in doc:
        out.append(("watchdog", Text(f"an agent idle {doc['watchdog']['window_s']} s becomes unknown")))
    if not doc["skipped"]["lines"]:
        out.append(("skipped lines", Text("none")))
    out += [
        ("oversized lines", Text(_oversized_line(doc.get("oversized")))),
        ("last prune", Text("never" if p is None else f"{p['ran_at']}: {plural(p['rows'], 'row')} of {p['target']}")),
        ("last backup", Text(_ago(doc["backup"]["last_backup_at"], now))),
    ]
    return out


def _search(db: dict[str, Any]) -> str:
    """``; search index <size>`` of the database line (nothing when the size is unknown)."""
    s = db.get("search") or {}
    return "" if s.get("bytes") is None else f"; search index {_size(s['bytes'])}"


def _tail_line(tail: dict[str, Any]) -> str:
    """``541 B not yet read in 2 of 2 files tracked so far``: the lag of the files with a checkpoint.

    Only files an ingest has reached have one: ``status`` says so on the line under this one
    ("541 B not yet read in 2 files" would hide 23 MB in 226 files no ingest has reached).
    """
    tracked = f"{plural(tail['files_tracked'], 'file')} tracked so far"
    if tail["bytes_behind_on_disk"] is None:
        behind = _size(tail.get("bytes_behind_at_last_read"))
        return f"{behind} behind at the last read, {tracked} (not compared: --no-stat)"
    lag = f"{_size(tail['bytes_behind_on_disk'])} not yet read in {tail['files_behind_on_disk']} of {tracked}"
    if tail["files_missing_on_disk"]:
        lag += f"; {plural(tail['files_missing_on_disk'], 'file')} gone from disk (kept in the log)"
    return lag


def clock_rows(wd: dict[str, Any]) -> list[Row]:
    """Warnings that a clock was wrong (``status.clock_warnings``), one row each, in red."""
    return [("clock", Text(w, style="bold red")) for w in clock_warnings(wd)]


def _oversized_line(oversized: dict[str, Any] | None) -> str:
    """``none`` or ``2 lines (longer than max_line_bytes: ...)``: transcript lines logged as markers."""
    n = (oversized or {}).get("lines", 0)
    if not n:
        return "none"
    return f"{plural(n, 'line')} (longer than max_line_bytes: logged as marker rows)"


def render_quarantine(console: Console, q: dict[str, Any] | None, *, listed: int | None = None) -> None:
    """The quarantined records of ``status``: counts per reason, then the newest (``listed`` of
    them when given, all the document lists otherwise) with where they are."""
    if not q or not q["records"]:
        console.print("quarantined records: none")
        return
    counts = ", ".join(f"{k} {v}" for k, v in q["by_reason"].items())
    shown = q["listed"] if listed is None else q["listed"][:listed]
    more = "" if len(shown) == len(q["listed"]) else " (--verbose lists more)"
    t = Table(
        "reason",
        "origin",
        "offset",
        "detail",
        title=f"quarantined records: {q['records']} ({counts}); newest {len(shown)}{more}",
        title_justify="left",
    )
    for r in shown:
        off = r["origin_offset"]
        t.add_row(r["reason"], Text(r["origin"]), "-" if off is None else str(off), Text(r["detail"]))
    console.print(t)
