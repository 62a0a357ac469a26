"""The terminal form of a search answer (``ingestd search``): two lines per result, within the width.

Line one: the session's id prefix, the document's kind (and tool name), its local time, the
session's title or slug, and its project; line two: the snippet, the matched words in bold, line
breaks shown as ``⏎``, cut to the width. Every string goes through ``printable_text`` first.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from ingestd.report.printable import printable_text
from ingestd.report.render import short_path, when
from ingestd.report.short import cut
from ingestd.report.window import Zone


def _one_line(s: str) -> str:
    return printable_text(s.replace("\r\n", " ⏎ ").replace("\n", " ⏎ ").replace("\r", " ⏎ "))


def result_lines(r: dict[str, Any], zone: Zone, home: str | None, width: int) -> list[Text]:
    """The two lines of one result (``search_report``'s result shape), each at most ``width`` cells."""
    kind = r["kind"] + (f" {r['label']}" if r["kind"] == "tool" and r.get("label") else "")
    name = r.get("title") or r.get("slug") or ""
    agent = f" agent {r['agent_id'][:8]}" if r.get("agent_id") else ""
    head = f"{r['session_id'][:8]}{agent}  {printable_text(kind)}  {when(r.get('occurred_at'), zone)}"
    rest = "  ".join(x for x in (printable_text(name), short_path(r.get("project"), home, 30)) if x and x != "-")
    first = Text(cut(head + ("  " + rest if rest else ""), width))
    first.stylize("bold", 0, min(8, len(first)))
    second = Text("  ")
    room = width - 2
    for part in r["snippet"]:
        if room <= 0:
            break
        piece = _one_line(part["text"])
        if cell_len(piece) > room:
            piece = cut(piece, room)
        second.append(piece, style="bold" if part["hit"] else None)
        room -= cell_len(piece)
    return [first, second]


def render_search(console: Console, doc: dict[str, Any], zone: Zone, home: str | None) -> None:
    """Every result's two lines, then what was matched and whether more results exist."""
    width = max(console.width, 20)
    for r in doc["results"]:
        for line in result_lines(r, zone, home, width):
            console.print(line, overflow="crop", no_wrap=True, soft_wrap=False)
    n = doc["count"]
    what = f"{n} result{'s' if n != 1 else ''}" if n else "no results"
    more = " (more past the limit: --limit N)" if doc["limited"] else ""
    console.print(Text(cut(f"{what} for {printable_text(doc['match'])}{more}", width), style="dim"))
