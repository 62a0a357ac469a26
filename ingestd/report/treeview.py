"""Terminal rendering of ``ingestd tree``: the agent tree with rich, from the ``--json`` document.

Each agent's label is whole phrases (who, the Task description it was given, when, tokens and
cost, tool calls by status in the JSON's words) packed to the width left at its depth, so a phrase
is never split across lines at 80 columns; agent ids are shortened unambiguously (``short_ids``).
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from ingestd.report.printable import printable
from ingestd.report.render import STATUS_STYLE, short_path, tokens, unpriced_note, usd, when
from ingestd.report.short import flow, short_ids
from ingestd.report.window import Zone
from ingestd.report.words import plural


def _tree_ids(doc: dict[str, Any]) -> dict[str, str]:
    """Every agent id in a tree document shortened unambiguously (``short.short_ids``); the main
    agent, whose id is the session's, as its 8-character prefix."""
    ids: list[str] = []
    stack = [n for n in reversed([doc["tree"], *doc["orphans"], *doc["compaction_agents"]]) if n is not None]
    while stack:  # pre-order, iteratively: a chain of agents is as deep as it is (SPEC §4.3)
        node = stack.pop()
        ids.append(node["agent_id"])
        stack.extend(reversed(node["children"]))
    sid = doc["session"]["session_id"]
    out = short_ids(i for i in ids if i != sid)
    out[sid] = sid[:8]
    return out


def _tools(tc: dict[str, Any]) -> list[str]:
    """``tools 47: Edit 22, Bash 13, Read 10, LS 2`` and ``36 completed, 11 failed`` (the JSON's words)."""
    if not tc["total"]:
        return []
    top = sorted(tc["by_tool"].items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{k} {v}" for k, v in top[:4]) + (
        f", {plural(len(top) - 4, 'more tool')}" if len(top) > 4 else ""
    )
    statuses = ", ".join(f"{v} {k}" for k, v in sorted(tc["by_status"].items(), key=lambda kv: (-kv[1], kv[0])))
    return [f"tools {tc['total']}: {shown}", statuses]


def _flow_styled(phrases: list[tuple[str, str]], width: int, sep: str = "  ") -> Text:
    """``(text, style)`` phrases packed into lines of ``width`` (``short.flow``), styles kept."""
    lines = flow([p for p, _ in phrases], width, sep)
    out = Text()
    it = iter(phrases)
    for n, line in enumerate(lines):
        if n:
            out.append("\n")
        used = 0
        while used < len(line):
            text, style = next(it)
            while not text:
                text, style = next(it)
            if used:
                out.append(sep)
                used += len(sep)
            out.append(text, style=style)
            used += len(text)
    return out


def _label(node: dict[str, Any], zone: Zone, ids: dict[str, str], width: int, flat: str | None = None) -> Text:
    """An agent as short lines of whole phrases packed to ``width``: who (type, id, status, cause,
    provenance, and ``flat``: where it sits when the tree no longer indents), the Task description
    it was given, when, tokens and cost, tool calls by status."""
    name = "main" if node["type"] == "main" else (node["subagent_type"] or "subagent")
    if node["type"] == "teammate":
        name = f"teammate {node['name']}" if node.get("name") else "teammate"
    status = node["status"] or "-"
    who = [
        (name, "bold"),
        (ids.get(node["agent_id"], node["agent_id"]), "dim"),
        (status if not node["outcome_cause"] else f"{status} ({node['outcome_cause']})", STATUS_STYLE.get(status, "")),
    ]
    if node["orphan_reason"]:
        who.append((f"ORPHAN: {node['orphan_reason'].replace('_', ' ')}", "bold magenta"))
    if node["edge"]:
        who.append((f"via {node['edge']['source']}", "blue"))
    if flat:
        who.append((flat, "yellow"))
    out = _flow_styled(who, width, " ")
    if node.get("description"):
        out.append("\n")
        out.append_text(_flow_styled([(w, "italic") for w in f"“{node['description']}”".split()], width, " "))
    own, sub = node["own"], node["subtree"]
    first, last = when(node["first_seen_at"], zone), when(node["last_seen_at"], zone)
    span = f"{first} → {last}"
    seen = [(span, "dim")] if cell_len(span) <= width else [(f"{first} →", "dim"), (last, "dim")]
    phrases = [*seen, (f"own {tokens(own['tokens'])} tok {usd(own).plain}", "")]
    if node["children"]:
        phrases.append((f"subtree {tokens(sub['tokens'])} tok {usd(sub).plain}", ""))
    phrases += [(p, "dim") for p in _tools(node["tool_calls"])]
    out.append("\n")
    out.append_text(_flow_styled(phrases, width))
    return out


MIN_LABEL_WIDTH = 36
"""Columns an agent's label keeps however deep it is: past that depth the tree stops indenting."""


def _grow(branch: Tree, top: dict[str, Any], zone: Zone, ids: dict[str, str], width: int) -> None:
    """Add ``top`` and its subtree under ``branch``, each child one level (4 columns) in.

    Iterative (a chain of agents is unbounded, SPEC §4.3). Where the next level would leave a
    label fewer than ``MIN_LABEL_WIDTH`` columns, the deeper agents are listed in order at that
    level instead, each saying its depth and its parent, so a deep chain stays readable.
    """
    stack: list[tuple[Tree, dict[str, Any], int, str | None]] = [(branch, top, width, None)]
    while stack:
        at, node, w, parent = stack.pop()
        flat = f"depth {node['depth']}, under {ids.get(parent, parent)}" if parent is not None else None
        sub = at.add(_label(node, zone, ids, w, flat))
        nested = w - 4 >= MIN_LABEL_WIDTH
        for child in reversed(node["children"]):
            stack.append((sub, child, w - 4, None) if nested else (at, child, w, node["agent_id"]))


def render_tree(console: Console, doc: dict[str, Any], zone: Zone, home: str | None, *, store: bool = False) -> None:
    """The agent tree, then orphans and compaction sidechains under the session. Agent ids are
    shortened unambiguously (full in ``--json``); each label is whole phrases packed to the width
    left at its depth, so no phrase is split across lines."""
    doc = printable(doc)  # text from transcripts never drives the terminal
    s = doc["session"]
    ids = _tree_ids(doc)
    phrases = [
        f"session {s['session_id']}",
        short_path(s["project_path"], home, max(20, console.width - 2)),
        s["status"] or "-",
        plural(doc["agents"], "agent"),
        f"{tokens(s['tokens'])} tok {usd(s).plain}",
    ]
    if s.get("title"):
        phrases.insert(1, f"“{s['title']}”")
    root = Tree(Text("\n".join(flow(phrases, console.width)), style="bold"))
    width = console.width - 4
    if doc["tree"] is not None:
        _grow(root, doc["tree"], zone, ids, width)
    if doc["orphans"]:
        o = root.add(Text("orphans (no parent evidence; a parent is never invented)", style="bold magenta"))
        for node in doc["orphans"]:
            _grow(o, node, zone, ids, width - 4)
    if doc["compaction_agents"]:
        c = root.add(Text("compaction sidechains (cost belongs to the session)", style="dim"))
        for node in doc["compaction_agents"]:
            _grow(c, node, zone, ids, width - 4)
    if doc["unattributed"]:
        u = Text(f"usage with no agent: {tokens(doc['unattributed']['tokens'])} tok ", style="dim")
        u.append_text(usd(doc["unattributed"]))
        root.add(u)
    links = [("forked from", doc["forked_from"])] if doc.get("forked_from") else []
    links += [("forked into", f) for f in doc.get("forks") or []]
    for what, f in links:
        why = f["evidence"].replace("_", " ")
        root.add(Text(f"{what} session {f['session_id']} (via fork: {why})", style="blue"))
    lead = doc.get("teammate_of")
    if lead:
        why = lead["evidence"].replace("_", " ")
        root.add(Text(f"teammate {lead['name']} of lead session {lead['session_id']} (via {why})", style="blue"))
    for m in doc.get("teammate_sessions") or []:
        mate = Text(f"teammate {m['name']} in session {m['session_id']}: {tokens(m['tokens'])} tok ", style="blue")
        mate.append_text(usd(m))
        mate.append(" (its own session's, not in this total)", style="dim")
        root.add(mate)
    for line in [*claude_code_lines(doc.get("claude_code"), zone), *telemetry_lines(doc.get("telemetry"), zone, ids)]:
        root.add(Text("\n".join(flow(line.split("  "), width)), style="cyan"))
    console.print(root)
    unpriced_note(console, s, store=store)


def claude_code_lines(cc: dict[str, Any] | None, zone: Zone) -> list[str]:
    """Claude Code's own figures as lines (phrases joined by two spaces): its cost-state totals and
    whether they agree with ingestd's (each differing count, per model), its status line's estimate. Pure."""
    if not cc:
        return []
    out: list[str] = []
    st = cc.get("cost_state")
    if st:
        total = "?" if st["cost_usd"] is None else f"${st['cost_usd']:.6f}"
        verdict = "tokens agree" if st["tokens_agree"] else "TOKENS DIFFER"
        if st["cost_agrees"] is False:
            verdict += ", COST DIFFERS"
        elif st["cost_agrees"]:
            verdict += ", cost agrees"
        out.append(f"Claude Code's own totals (cost-state): {total}  {verdict}  (never added to ingestd's)")
        for m in st["models"]:
            for k in m["differs"]:
                a, b = m["claude_code"][k], m["ingestd"][k]
                out.append(f"  {m['model']} {k}: Claude Code {tokens(a)}, ingestd {tokens(b)}")
    line = cc.get("status_line")
    if line:
        at = when(line["sampled_at"], zone)
        out.append(f"Claude Code's status line: ${line['cost_usd']:.4f} (its estimate, {at})")
    return out


def telemetry_lines(tm: dict[str, Any] | None, zone: Zone, ids: dict[str, str]) -> list[str]:
    """What Claude Code's telemetry says of the session, as lines (phrases joined by two spaces):
    its requests matched to transcript messages and how many disagree (each listed), those only
    it shows, its own cost, and its API errors by agent (the latest listed). Pure."""
    if not tm:
        return []
    cost = "" if tm["claude_code_cost_usd"] is None else f"  its cost ${tm['claude_code_cost_usd']:.6f}"
    own = tm["otel_only_usage"]
    only = f"{tm['otel_only']} in telemetry only"
    if tm["otel_only"]:
        only += f" ({tokens(own['tokens'])} tok {usd(own).plain}, in the session's cost)"
    out = [
        f"Claude Code's telemetry: {plural(tm['events'], 'API request')}  {tm['matched']} matched to transcript"
        f" messages ({tm['disagreements']} disagree)  {only}{cost}  (never added to ingestd's)"
    ]
    out += [f"  disagrees: {d['message_id']} {d['mismatch']}" for d in tm["disagreeing"]]
    if tm["errors"]:
        who = ", ".join(f"{ids.get(a, a[:8]) if a else 'no agent'} {n}" for a, n in tm["errors_by_agent"].items())
        out.append(f"API errors (telemetry): {tm['errors']}  by agent: {who}")
        for e in tm["api_errors"][:3]:
            out.append(f"  {when(e['occurred_at'], zone)}  {e['error'] or '?'}  {e['model'] or ''}".rstrip())
    return out


def render_prompts(console: Console, doc: dict[str, Any], zone: Zone, *, store: bool = False) -> None:
    """A session's work by prompt (``report.prompts``): each prompt in the order it began, with when,
    its text, the subagents, tool calls, tokens and cost of the work placed there."""
    doc = printable(doc)
    s = doc["session"]
    width = console.width
    head = [
        f"session {s['session_id']}",
        plural(len(doc["prompts"]), "prompt"),
        f"{tokens(s['tokens'])} tok {usd(s).plain}",
    ]
    console.print(Text("\n".join(flow(head, width)), style="bold"))
    groups = [(p, f"#{p['prompt_index'] + 1}" if p["prompt_index"] is not None else "#?") for p in doc["prompts"]]
    if doc["no_prompt"]:
        groups.append((doc["no_prompt"], "before any prompt"))
    for g, label in groups:
        text = " ".join((g.get("text") or "").split()) or "(no prompt text in the log)"
        if len(text) > width * 2:
            text = text[: width * 2 - 1] + "…"
        phrases = [
            (label, "bold"),
            (when(g["first_at"], zone) if g.get("first_at") else "", "dim"),
            (f"{tokens(g['tokens'])} tok {usd(g).plain}", ""),
            (plural(len(g["agents"]), "subagent"), "dim"),
            *[(p, "dim") for p in _tools(g["tool_calls"])],
        ]
        console.print(_flow_styled(phrases, width))
        console.print(Text("\n".join(flow(text.split(), width - 2, " ")), style="italic"), style="", highlight=False)
    unpriced_note(console, s, store=store)
