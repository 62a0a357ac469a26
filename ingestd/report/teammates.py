"""Teammates that ran as sessions of their own, attributed to their lead (DESIGN.md "Teammates"). Read-only.

In an agent team a teammate in its own terminal (``teammateMode`` ``tmux``, or ``auto`` inside
tmux) is a full Claude Code process: its transcript is a session of its own, in the projects
folder of its working directory, and every record of it carries ``teamName`` and ``agentName``
(2.1.332 bundle: the record writer stamps both from the team context; claude-code-log's teammates
notes saw ``teamName`` on every record of a team's sessions, 2.1.34). Nothing in it names the
lead's session: Claude Code passes ``--parent-session-id`` on the teammate's command line and
keeps ``leadSessionId`` in ``~/.claude/teams/<team>/config.json``, neither of which is a
transcript. Each session's fold keeps its ``sessions.team_name`` / ``agent_name``; the lead is
another session, joined here from the final rows (any order of ingestion gives the same answer):

1. ``spawn_name``: a session of the same ``team_name`` with an agent whose ``name`` is the
   teammate's ``agent_name`` (the lead's spawn call named it: the Agent tool's ``name``).
2. Else ``team_lead``: the one session of that ``team_name`` whose records name no agent (the
   lead writes no ``agentName`` of its own), when there is exactly one.

Several candidates under rule 1: the smallest session id. No candidate: no lead is given (a
parent is never invented). The teammate's tokens and cost stay its own session's; the lead's tree
lists them beside its own, never added.
"""

from __future__ import annotations

from typing import Any

from ingestd.store.connection import Db, storage_errors


def _has_columns(conn: Db) -> bool:
    if getattr(conn, "central", False):
        return True
    return "team_name" in {str(r[1]) for r in conn.execute("PRAGMA table_info(sessions)")}


def _lead(conn: Db, sid: str, team: str | None, name: str | None) -> dict[str, Any] | None:
    if not team or not name:
        return None
    named: list[Any] = conn.execute(
        "SELECT a.session_id, a.id FROM agents a JOIN sessions s ON s.id = a.session_id"
        " WHERE s.team_name = ? AND a.name = ? AND a.session_id <> ? ORDER BY a.session_id, a.id LIMIT 1",
        (team, name, sid),
    ).fetchall()
    if named:
        return {"session_id": str(named[0][0]), "agent_id": str(named[0][1]), "evidence": "spawn_name"}
    leads: list[Any] = conn.execute(
        "SELECT id FROM sessions WHERE team_name = ? AND agent_name IS NULL AND id <> ? ORDER BY id LIMIT 2",
        (team, sid),
    ).fetchall()
    if len(leads) == 1:
        return {"session_id": str(leads[0][0]), "agent_id": None, "evidence": "team_lead"}
    return None


def lead_of(conn: Db, sid: str) -> dict[str, Any] | None:
    """The lead of session ``sid`` when it ran as a teammate of its own: ``{"session_id",
    "agent_id", "name", "team_name", "evidence"}`` (``agent_id``: the lead's agent for it, None
    under ``team_lead``), None when no evidence names one. Read-only."""
    with storage_errors():
        if not _has_columns(conn):
            return None
        row: list[Any] = conn.execute("SELECT team_name, agent_name FROM sessions WHERE id = ?", (sid,)).fetchall()
        if not row:
            return None
        team, name = row[0][0], row[0][1]
        lead = _lead(conn, sid, team, name)
    return {**lead, "name": name, "team_name": team} if lead is not None else None


def teammate_sessions(conn: Db, sid: str) -> list[dict[str, Any]]:
    """The sessions that ran as teammates of session ``sid`` (each one's ``lead_of`` is ``sid``):
    ``[{"session_id", "name", "agent_id", "evidence"}]`` by name, then id. Read-only."""
    with storage_errors():
        if not _has_columns(conn):
            return []
        team: list[Any] = conn.execute("SELECT team_name FROM sessions WHERE id = ?", (sid,)).fetchall()
        if not team or not team[0][0]:
            return []
        out = []
        for cid, name in conn.execute(
            "SELECT id, agent_name FROM sessions WHERE team_name = ? AND agent_name IS NOT NULL AND id <> ?",
            (team[0][0], sid),
        ):
            lead = _lead(conn, str(cid), str(team[0][0]), str(name))
            if lead is not None and lead["session_id"] == sid:
                out.append(
                    {
                        "session_id": str(cid),
                        "name": str(name),
                        "agent_id": lead["agent_id"],
                        "evidence": lead["evidence"],
                    }
                )
    return sorted(out, key=lambda t: (t["name"], t["session_id"]))
