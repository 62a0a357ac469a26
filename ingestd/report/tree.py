"""``ingestd tree SESSION``: a session's agent tree with per-agent and per-subtree cost (SPEC §4.2-4.5).

A child's parent is ``agents.parent_agent_id``, else the child's current edge in
``orchestration_edges``; the edge's ``source`` is shown as the link's provenance. A subagent with
no parent evidence is an orphan (SPEC §4.3: a parent is never invented) and is listed under the
session, marked as such; compaction sidechains (``acompact-``) have no spawn edge by design and are
listed apart. Per-agent usage needs ``token_usage`` (the rollup has no agent column); it is one
index range on ``token_usage_session``, priced by the same rate rule the rollup triggers use.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ingestd.errors import InputError
from ingestd.report.claudetotals import claude_totals, session_telemetry
from ingestd.report.forks import fork_children, fork_parent
from ingestd.report.sessions import _COLUMNS, session_row
from ingestd.report.teammates import lead_of, teammate_sessions
from ingestd.report.usage import RateTable, Usage, load_rates
from ingestd.store.connection import Db, storage_errors
from ingestd.store.rollup import RATE_SQL, SUMS_SQL, TIER_SQL


def resolve_session(conn: Db, prefix: str) -> str:
    """The one session id equal to, or starting with, ``prefix``. Read-only.

    The CLI and the read API both come here, so they resolve alike. The id is taken exactly as given:
    never trimmed or case-folded (an id is attacker-controlled text: ``" abc"`` or ``"ABC"`` must
    not open the session ``abc...``); an exact id wins over a longer one it is a prefix of.

    Raises:
        InputError: nothing to match (``reason="empty"``), no session matches
            (``reason="not_found"``) or several do (``reason="ambiguous"``, ``candidates`` lists up
            to five).
    """
    p = prefix
    if not p:
        raise InputError("give a session id or a unique prefix of one", reason="empty")
    with storage_errors():
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (p,)).fetchall():
            return p
        found = {
            str(r[0])
            for r in conn.execute(
                "SELECT id FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT 6", (p, p + "\U0010ffff")
            )
        }
    if not found:
        raise InputError(f"no session id starts with {p!r} (see `ingestd sessions`)", reason="not_found")
    if len(found) > 1:
        ids = sorted(found)
        shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        raise InputError(
            f"{p!r} matches several sessions ({shown}): give more of the id",
            reason="ambiguous",
            candidates=ids[:5],
        )
    return found.pop()


@dataclass(slots=True)
class _Agent:
    row: tuple[Any, ...]
    own: Usage = field(default_factory=Usage)
    tools_by_status: dict[str, int] = field(default_factory=dict)
    tools_by_name: dict[str, int] = field(default_factory=dict)
    edge: dict[str, Any] | None = None
    parent: str | None = None
    children: list[str] = field(default_factory=list)


def _load(conn: Db, sid: str, rates: RateTable) -> tuple[dict[str, _Agent], Usage]:
    agents = {
        r[0]: _Agent(r)
        for r in conn.execute(
            "SELECT id, type, subagent_type, status, parent_agent_id, first_seen_at, last_seen_at,"
            " outcome_cause, is_compaction, description, name FROM agents WHERE session_id = ?",
            (sid,),
        )
    }
    for child, parent, source, created_at, tool_use_id in conn.execute(
        "SELECT child_agent_id, parent_agent_id, source, created_at, tool_use_id"
        " FROM orchestration_edges WHERE session_id = ?",
        (sid,),
    ):
        a = agents.get(child)
        if a is not None:
            a.edge = {"parent_agent_id": parent, "source": source, "created_at": created_at, "tool_use_id": tool_use_id}
    unattributed = Usage()
    for aid, model, version, tier, speed, geo, *sums in conn.execute(
        f"SELECT t.agent_id, t.model, {RATE_SQL}, {TIER_SQL}, t.speed, t.inference_geo, {SUMS_SQL}"
        " FROM token_usage t WHERE t.session_id = ? GROUP BY 1, 2, 3, 4, 5, 6",
        (sid,),
    ):
        target = agents[aid].own if aid in agents else unattributed
        target.add_messages(model, version, int(tier), str(speed), sums, rates, str(geo))
    for aid, tool, status, n in conn.execute(
        "SELECT agent_id, COALESCE(tool_name, '?'), status, count(*) FROM tool_calls"
        " WHERE session_id = ? GROUP BY 1, 2, 3",
        (sid,),
    ):
        a = agents.get(aid)
        if a is not None:
            a.tools_by_status[status] = a.tools_by_status.get(status, 0) + int(n)
            a.tools_by_name[tool] = a.tools_by_name.get(tool, 0) + int(n)
    return agents, unattributed


def _fields(agents: dict[str, _Agent], aid: str, depth: int, orphan: str | None) -> dict[str, Any]:
    """An agent's node fields up to ``own`` (its subtree's cost and its children are added when the
    subtree is done)."""
    a = agents[aid]
    r = a.row
    return {
        "agent_id": aid,
        "type": r[1],
        "name": r[10],
        "subagent_type": r[2],
        "description": r[9],
        "status": r[3],
        "outcome_cause": r[7],
        "first_seen_at": r[5],
        "last_seen_at": r[6],
        "is_compaction": bool(r[8]),
        "parent_agent_id": a.parent,
        "edge": a.edge,
        "orphan_reason": orphan,
        "depth": depth,
        "tool_calls": {
            "total": sum(a.tools_by_status.values()),
            "by_status": dict(sorted(a.tools_by_status.items())),
            "by_tool": dict(sorted(a.tools_by_name.items())),
        },
        "own": a.own.to_json(),
    }


def _node(
    agents: dict[str, _Agent], aid: str, depth: int, seen: set[str], orphan: str | None
) -> tuple[dict[str, Any], Usage]:
    """The node of ``aid`` and its subtree's usage; every agent reached is added to ``seen``.

    Depth-first with an explicit stack, not recursion: a chain of agents is unbounded (SPEC §4.3),
    and a RecursionError at a few hundred levels was the result. Children are visited in
    first-seen order and an agent already ``seen`` (a parent cycle) is skipped, as before.
    """
    Frame = tuple[dict[str, Any], Usage, list[dict[str, Any]], Iterator[str]]

    def frame(x: str, d: int, why: str | None) -> Frame:
        # (node fields, subtree usage so far, children done, the children still to visit)
        usage = Usage()
        usage.merge(agents[x].own)
        kids = iter(sorted(agents[x].children, key=lambda c: (agents[c].row[5] or "", c)))
        return (_fields(agents, x, d, why), usage, [], kids)

    seen.add(aid)
    stack: list[Frame] = [frame(aid, depth, orphan)]
    while True:
        node, subtree, done, todo = stack[-1]
        cid = next((c for c in todo if c not in seen), None)
        if cid is not None:
            seen.add(cid)
            stack.append(frame(cid, depth + len(stack), None))
            continue
        node["subtree"] = subtree.to_json()
        node["children"] = done
        stack.pop()
        if not stack:
            return node, subtree
        stack[-1][2].append(node)
        stack[-1][1].merge(subtree)


def tree_report(conn: Db, session: str) -> dict[str, Any]:
    """The agent tree of one session (``session``: an id or a unique prefix). Read-only.

    Returns:
        ``{"session", "tree", "orphans", "compaction_agents", "unattributed", "agents", "claude_code",
        "telemetry", "forked_from", "forks"}``; ``telemetry`` is what Claude Code's own telemetry says
        of the session beside the exact figures (``claudetotals.session_telemetry``: matched,
        telemetry-only, disagreements, API errors; None without any); ``forked_from`` is the
        session this one was forked from (``forks.fork_parent``, provenance ``fork``), ``forks`` the
        sessions forked from it. ``teammate_of`` is the lead of a teammate that ran as a session of
        its own (``teammates.lead_of``), ``teammate_sessions`` those sessions of this lead, each with
        its status, tokens and cost (its own session's, never added here).
        ``session`` is the ``sessions`` row (cost from the rollup); ``claude_code`` Claude Code's own
        figures beside it (``claudetotals.claude_totals``: never added to any cost here); ``tree``
        the main agent's node (or None); each node has its fields, ``edge`` (provenance),
        ``tool_calls``, ``own`` and ``subtree`` cost keys and ``children``. ``orphans`` are subagents
        with no parent evidence (or whose parent is not an agent of the session), with
        ``orphan_reason``; ``unattributed`` is usage with no agent.

    Raises:
        InputError: see ``resolve_session``.
    """
    sid = resolve_session(conn, session)
    with storage_errors():
        rates = load_rates(conn)
        srow = conn.execute(f"SELECT {_COLUMNS} FROM sessions s WHERE s.id = ?", (sid,)).fetchall()[0]
        session_doc = session_row(conn, srow, rates)
        agents, unattributed = _load(conn, sid, rates)
        own_figures = claude_totals(conn, sid, rates)
        telemetry = session_telemetry(conn, sid, rates)
        parent, children = fork_parent(conn, sid), fork_children(conn, sid)
        lead = lead_of(conn, sid)
        mates = []
        for m in teammate_sessions(conn, sid):
            mrow = conn.execute(f"SELECT {_COLUMNS} FROM sessions s WHERE s.id = ?", (m["session_id"],)).fetchall()[0]
            doc = session_row(conn, mrow, rates)
            keep = ("status", "tokens", "cost_usd", "cost_complete", "billed_messages")
            mates.append({**m, **{k: doc[k] for k in keep if k in doc}})
    orphans: list[tuple[str, str]] = []
    compaction: list[str] = []
    main = sid if sid in agents else next((k for k, a in agents.items() if a.row[1] == "main"), None)
    for aid, a in agents.items():
        if aid == main:
            continue
        a.parent = a.row[4] or (a.edge or {}).get("parent_agent_id")
        if a.parent is None:
            if a.row[8]:
                compaction.append(aid)
            else:
                orphans.append((aid, "no_parent_evidence"))
        elif a.parent not in agents or a.parent == aid:
            orphans.append((aid, "parent_not_in_session"))
        else:
            agents[a.parent].children.append(aid)
    seen: set[str] = set()
    tree = _node(agents, main, 0, seen, None)[0] if main is not None else None

    def first_seen(aid: str) -> tuple[str, str]:
        return (agents[aid].row[5] or "", aid)

    orphan_nodes = [_node(agents, aid, 0, seen, why)[0] for aid, why in sorted(orphans, key=lambda o: first_seen(o[0]))]
    compaction_nodes = [_node(agents, aid, 0, seen, None)[0] for aid in sorted(compaction, key=first_seen)]
    # Agents still unplaced sit on a parent cycle; show them rather than drop them.
    for aid in sorted((a for a in agents if a not in seen), key=first_seen):
        if aid not in seen:
            orphan_nodes.append(_node(agents, aid, 0, seen, "parent_cycle")[0])
    return {
        "session": session_doc,
        "agents": len(agents),
        "tree": tree,
        "orphans": orphan_nodes,
        "compaction_agents": compaction_nodes,
        "unattributed": unattributed.to_json() if unattributed.tokens or unattributed.billed_messages else None,
        "claude_code": own_figures,
        "telemetry": telemetry,
        "forked_from": parent,
        "forks": children,
        "teammate_of": lead,
        "teammate_sessions": mates,
    }
