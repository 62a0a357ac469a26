"""The terminal form of ``ingestd blocks``: one row per block within the width, the active one marked."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from ingestd.report.layout import Col
from ingestd.report.render import print_table, tokens, unpriced_note, usd, when
from ingestd.report.window import Zone


def missing(doc: dict[str, Any]) -> dict[str, Any]:
    """What the shown blocks' figures leave out, as one usage document's ``unpriced`` (summed over the
    blocks, reasons joined), ``uncounted`` and ``unread`` (``render.unpriced_note`` says it). Pure."""
    unpriced: dict[str, dict[str, Any]] = {}
    for b in doc["blocks"]:
        for model, u in b["unpriced"].items():
            acc = unpriced.setdefault(model, {"tokens": 0, "messages": 0, "web_search_requests": 0, "reasons": []})
            acc["tokens"] += u["tokens"]
            acc["messages"] += u["messages"]
            acc["reasons"] = sorted({*acc["reasons"], *u.get("reasons", ())})
    return {"unpriced": dict(sorted(unpriced.items())), "uncounted": doc.get("uncounted"), "unread": doc.get("unread")}


def render_blocks(console: Console, doc: dict[str, Any], zone: Zone) -> None:
    """Start and end (local), status, messages, tokens and cost per block; the active block's burn
    rate and projection under the table."""
    rows = doc["blocks"]
    if not rows:
        console.print(Text("no active block" if doc["active"] is None else "no usage in this window", style="dim"))
        unpriced_note(console, missing(doc))
        return
    cols = [
        Col("start", [when(r["start"], zone) for r in rows], key=True),
        Col("end", [when(r["end"], zone, "%H:%M") for r in rows], key=True),
        Col("", [("active" if r["active"] else "") + (" official" if r["official"] else "") for r in rows]),
        Col("msgs", [str(r["billed_messages"]) for r in rows], justify="right"),
        Col("tokens", [tokens(r["tokens"]) for r in rows], justify="right", key=True),
        Col("cost", [usd(r) for r in rows], justify="right", key=True),
        Col("models", [", ".join(m.removeprefix("claude-") for m in r["models"]) for r in rows]),
    ]
    print_table(console, f"5-hour blocks (times in {zone.name})", cols, ["models", "msgs"])
    unpriced_note(console, missing(doc))
    a = doc["active"]
    if a is not None:
        # the burn rate and the projection come from the cost so far: no more complete than it is
        more = "" if a["cost_complete"] else "+?"
        console.print(
            Text(
                f"active: {usd(a)} so far, ${float(a['burn_usd_per_hour']):.2f}{more}/h, "
                f"projected ${float(a['projected_cost_usd']):.2f}{more} at {when(a['end'], zone, '%H:%M')} "
                f"({a['remaining_minutes']} min left)"
            )
        )
