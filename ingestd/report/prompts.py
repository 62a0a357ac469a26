"""``ingestd tree SESSION --by prompt``: a session's work grouped by the user prompt it answered.

Claude Code 2.1.196+ names each turn's prompt (``promptId`` on user records, ``prompt_id`` on every
hook): the ``prompts`` projection holds each prompt with its text and the first time anything named
it, and each tool call keeps its ``prompt_id``. Assistant records name no prompt, so a message is
placed by rule (``Placer``): a subagent's work belongs to the prompt of the call that spawned it
(which its descendants inherit), any other work (the main agent's, a call naming no prompt) to the
latest prompt that began at or before it. Work before the first prompt, or with no time, is
``no_prompt``. Every message and call is placed once, so the prompts' costs add up to the session's.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from ingestd.report.sessions import _COLUMNS, session_row
from ingestd.report.tree import resolve_session
from ingestd.report.usage import Usage, load_rates
from ingestd.store.connection import Db, storage_errors
from ingestd.store.rollup import RATE_SQL, SUMS_SQL, TIER_SQL


@dataclass(slots=True)
class _Group:
    usage: Usage = field(default_factory=Usage)
    agents: list[str] = field(default_factory=list)
    by_status: dict[str, int] = field(default_factory=dict)
    by_tool: dict[str, int] = field(default_factory=dict)

    def call(self, tool: str, status: str) -> None:
        self.by_status[status] = self.by_status.get(status, 0) + 1
        self.by_tool[tool] = self.by_tool.get(tool, 0) + 1

    def to_json(self) -> dict[str, Any]:
        return {
            "agents": sorted(self.agents),
            "tool_calls": {
                "total": sum(self.by_status.values()),
                "by_status": dict(sorted(self.by_status.items())),
                "by_tool": dict(sorted(self.by_tool.items())),
            },
            **self.usage.to_json(),
        }


@dataclass(frozen=True, slots=True)
class Placer:
    """Which prompt a piece of work belongs to. Pure.

    Attributes:
        starts: the prompts' first times, sorted; ids: the prompt id of each start.
        agent_prompt: subagent id -> the prompt its spawning call named (a descendant inherits it).
    """

    starts: list[str]
    ids: list[str]
    agent_prompt: dict[str, str]

    @classmethod
    def of(
        cls,
        prompts: list[tuple[str, str | None]],
        parents: dict[str, str | None],
        spawn_prompt: dict[str, str | None],
    ) -> Placer:
        """From ``(prompt id, first time)`` pairs, each subagent's parent and its spawning call's
        prompt (None: the call names none)."""
        timed = sorted((at, pid) for pid, at in prompts if at is not None)
        own: dict[str, str] = {}
        for aid in parents:
            seen: set[str] = set()
            cur: str | None = aid
            while cur is not None and cur not in seen:  # the nearest ancestor's spawn that names a prompt
                seen.add(cur)
                p = spawn_prompt.get(cur)
                if p is not None:
                    own[aid] = p
                    break
                cur = parents.get(cur)
        return cls([t for t, _ in timed], [p for _, p in timed], own)

    def by_time(self, at: str | None) -> str | None:
        """The latest prompt that began at or before ``at`` (None: before every prompt, or no time)."""
        if at is None:
            return None
        i = bisect_right(self.starts, at)
        return self.ids[i - 1] if i else None

    def place(self, agent: str | None, prompt_id: str | None, at: str | None) -> str | None:
        """The prompt of work by ``agent`` at ``at`` that names ``prompt_id`` (None: names none)."""
        if prompt_id is not None:
            return prompt_id
        if agent is not None and agent in self.agent_prompt:
            return self.agent_prompt[agent]
        return self.by_time(at)


def prompts_report(conn: Db, session: str) -> dict[str, Any]:
    """One session's work grouped by prompt (``session``: an id or a unique prefix). Read-only.

    Returns:
        ``{"session", "by": "prompt", "prompts", "no_prompt"}``. ``session`` is the ``sessions``
        row as in ``tree_report``; ``prompts`` in the order they began: ``{"prompt_id",
        "prompt_index", "text", "first_at", "last_at", "agents" (subagent ids placed there),
        "tool_calls": {"total", "by_status", "by_tool"}, and the cost keys (``Usage.to_json``)}``;
        ``no_prompt`` the same keys for work placed before any prompt (None when there is none).

    Raises:
        InputError: see ``resolve_session``.
        StorageError: the store refused the read.
    """
    sid = resolve_session(conn, session)
    with storage_errors():
        rates = load_rates(conn)
        srow = conn.execute(f"SELECT {_COLUMNS} FROM sessions s WHERE s.id = ?", (sid,)).fetchall()[0]
        session_doc = session_row(conn, srow, rates)
        prompts: list[Any] = conn.execute(
            "SELECT prompt_id, prompt_index, text, first_at, last_at FROM prompts WHERE session_id = ?"
            " ORDER BY first_at IS NULL, first_at, prompt_id",
            (sid,),
        ).fetchall()
        agents: list[Any] = conn.execute(
            # the spawning call's prompt by a subquery: a LEFT JOIN would read the whole view tool_calls
            "SELECT a.id, a.type, a.first_seen_at, COALESCE(a.parent_agent_id, e.parent_agent_id),"
            " (SELECT c.prompt_id FROM tool_calls c"
            " WHERE c.session_id = a.session_id AND c.tool_use_id = e.tool_use_id)"
            " FROM agents a LEFT JOIN orchestration_edges e ON e.session_id = a.session_id AND e.child_agent_id = a.id"
            " WHERE a.session_id = ?",
            (sid,),
        ).fetchall()
        calls: list[Any] = conn.execute(
            "SELECT agent_id, prompt_id, started_at, COALESCE(tool_name, '?'), status FROM tool_calls"
            " WHERE session_id = ?",
            (sid,),
        ).fetchall()
        messages: list[Any] = conn.execute(
            f"SELECT t.agent_id, t.occurred_at, t.model, {RATE_SQL}, {TIER_SQL}, t.speed, t.inference_geo, {SUMS_SQL}"
            " FROM token_usage t WHERE t.session_id = ? GROUP BY 1, 2, 3, 4, 5, 6, 7",
            (sid,),
        ).fetchall()
    placer = Placer.of(
        [(str(p[0]), p[3]) for p in prompts],
        {str(a[0]): (str(a[3]) if a[3] is not None else None) for a in agents if a[1] != "main"},
        {str(a[0]): (str(a[4]) if a[4] is not None else None) for a in agents if a[1] != "main"},
    )
    groups: dict[str | None, _Group] = {str(p[0]): _Group() for p in prompts}

    def group(pid: str | None) -> _Group:
        return groups.setdefault(pid, _Group())

    for aid, kind, first_seen, *_ in agents:
        if kind != "main":
            group(placer.place(str(aid), None, first_seen)).agents.append(str(aid))
    for aid, pid, started, tool, status in calls:
        group(placer.place(aid, pid, started)).call(str(tool), str(status))
    for aid, at, model, version, tier, speed, geo, *sums in messages:
        group(placer.place(aid, None, at)).usage.add_messages(
            str(model), version, int(tier), str(speed), sums, rates, str(geo)
        )
    out = []
    for pid, index, text, first_at, last_at in prompts:
        out.append(
            {
                "prompt_id": pid,
                "prompt_index": index,
                "text": text,
                "first_at": first_at,
                "last_at": last_at,
                **groups.pop(str(pid)).to_json(),
            }
        )
    rest = groups.pop(None, None)
    for pid, g in sorted(groups.items(), key=lambda kv: str(kv[0])):
        # a call naming a prompt the prompts table does not hold (its records were not read)
        blank = {"prompt_id": pid, "prompt_index": None, "text": None, "first_at": None, "last_at": None}
        out.append({**blank, **g.to_json()})
    return {"session": session_doc, "by": "prompt", "prompts": out, "no_prompt": rest.to_json() if rest else None}
