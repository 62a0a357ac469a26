"""``ingestd sessions``: one row per session, most recently active first (SPEC §4.1, §9).

Tokens and cost per session come from ``token_usage_rollup`` (its primary key starts with
``session_id``, so each session is an index range, never a scan of ``token_usage``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ingestd.errors import InputError
from ingestd.report.activity import first_prompt, session_name
from ingestd.report.usage import RateTable, Usage, load_rates, uncounted_usage, unread_tails
from ingestd.report.window import Window, range_clauses
from ingestd.store.connection import Db, scalar, storage_errors
from ingestd.store.rollup import SUM_COLUMNS

_COLUMNS = (
    "s.id, s.project_slug, s.project_path, s.started_at, s.last_activity_at, s.status,"
    " s.git_branch, s.cc_version, s.title, s.slug, s.end_reason, s.title_source"
)


SQLITE_MAX_INT = (1 << 63) - 1

SORTS = ("last_activity", "cost", "tokens")
"""How ``sessions_report`` orders its rows: most recently active first (the default), or the
highest priced cost first, or the most tokens first (ties: the most recently active first)."""


def session_usage(conn: Db, session_id: str, rates: RateTable) -> Usage:
    """The session's whole usage from the rollup. Read-only."""
    u = Usage()
    for model, version, tier, speed, geo, *sums in conn.execute(
        "SELECT model, rate_effective_from, tier, speed, inference_geo, "
        + ", ".join(f"sum({c})" for c in SUM_COLUMNS)
        + " FROM token_usage_rollup WHERE session_id = ? GROUP BY 1, 2, 3, 4, 5",
        (session_id,),
    ):
        u.add_messages(model, version, int(tier), str(speed), sums, rates, str(geo))
    u.add_uncounted(*uncounted_usage(conn, session=session_id))
    u.add_unread(*unread_tails(conn, session=session_id))
    return u


def session_row(conn: Db, r: tuple[Any, ...], rates: RateTable) -> dict[str, Any]:
    """Shape one ``sessions`` row (selected with ``_COLUMNS``) with its agents and usage."""
    sid = r[0]
    agents: dict[str, int] = {
        str(t): int(n)
        for t, n in conn.execute("SELECT type, count(*) FROM agents WHERE session_id = ? GROUP BY type", (sid,))
    }
    named = {"title": r[8], "slug": r[9], "first_prompt": None if r[8] or r[9] else first_prompt(conn, sid)}
    name, name_source = session_name(named)
    return {
        "session_id": sid,
        "project_path": r[2],
        "project_slug": r[1],
        "title": r[8],
        "title_source": r[11],
        "slug": r[9],
        "first_prompt": named["first_prompt"],
        "name": name,
        "name_source": name_source,
        "git_branch": r[6],
        "cc_version": r[7],
        "started_at": r[3],
        "last_activity_at": r[4],
        "status": r[5],
        "end_reason": r[10],
        "agents": int(sum(agents.values())),
        "subagents": int(agents.get("subagent", 0)),
        **session_usage(conn, sid, rates).to_json(),
    }


STATUSES = ("working", "waiting", "completed", "error", "unknown")
"""Every value of ``sessions.status`` (the schema's CHECK): what ``Narrow.status`` may be."""


@dataclass(frozen=True, slots=True)
class Narrow:
    """Filters of the live view's list, applied over every session (``GET /api/sessions``).

    Attributes:
        search: str | None, keep sessions whose id starts with it or whose title contains it, both
            ignoring case (ASCII case in SQLite; the text as given also matches).
        project_is: str | None, keep the sessions of exactly this project: its real path, or the
            folder name of a session with none (what ``projects_report`` lists).
        status: str | None, keep sessions with exactly this status.
    """

    search: str | None = None
    project_is: str | None = None
    status: str | None = None

    def clauses(self) -> tuple[list[str], list[Any]]:
        """SQL conditions on ``sessions s`` and their parameters. Pure."""
        where: list[str] = []
        params: list[Any] = []
        if self.search:
            low = self.search.lower()
            prefix = low.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where.append(
                "(lower(s.id) LIKE ? ESCAPE '\\' OR instr(lower(COALESCE(s.title, '')), ?) > 0"
                " OR instr(COALESCE(s.title, ''), ?) > 0)"
            )
            params += [prefix, low, self.search]
        if self.project_is:
            where.append("COALESCE(s.project_path, s.project_slug) = ?")
            params.append(self.project_is)
        if self.status:
            where.append("s.status = ?")
            params.append(self.status)
        return where, params


def projects_report(conn: Db) -> dict[str, Any]:
    """Every project with sessions, by name: ``{"projects": [{"project", "sessions"}]}``; ``project`` is
    the real path, or the folder name of sessions with none (``Narrow.project_is`` takes it). Read-only."""
    with storage_errors():
        rows: list[Any] = conn.execute(
            "SELECT COALESCE(project_path, project_slug) AS p, count(*) FROM sessions"
            " WHERE COALESCE(project_path, project_slug) IS NOT NULL GROUP BY p ORDER BY p"
        ).fetchall()
    return {"projects": [{"project": str(p), "sessions": int(n)} for p, n in rows]}


def sessions_report(
    conn: Db,
    *,
    window: Window,
    project: str | None = None,
    limit: int | None = None,
    narrow: Narrow | None = None,
    sort: str = "last_activity",
) -> dict[str, Any]:
    """Sessions active within ``window``, most recently active first (or as ``sort`` says). Read-only.

    Args:
        conn: a read connection.
        window: keeps sessions whose activity overlaps ``[since, until)``.
        project: keep sessions whose real project path contains this text (or whose folder name equals it).
        limit: at most this many rows.
        narrow: the live view's filters (``Narrow``), over every session before ``limit``.
        sort: one of ``SORTS``. By ``cost`` or ``tokens`` every matching session's usage is
            summed before ``limit`` keeps the first (the order is over all of them, not a page).

    Returns:
        ``{"window", "sort", "count", "matched", "rows"}``: ``count`` rows shown of ``matched`` sessions in
        the window (more when ``limit`` cut the list); each row has the session's fields, its
        ``first_prompt`` (read from the log only for a session with neither title nor slug, else
        None), its ``name`` and ``name_source`` (``activity.session_name``),
        ``agents``/``subagents`` and the cost keys of ``Usage.to_json`` over the whole session.
    """
    if limit is not None and limit < 1:
        raise InputError("limit must be at least 1")
    if sort not in SORTS:
        raise InputError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    # A session is in the window when its span overlaps it.
    where, params = range_clauses(
        "COALESCE(s.last_activity_at, s.started_at)",
        window.since_utc,
        "COALESCE(s.started_at, s.last_activity_at)",
        window.until_utc,
    )
    if project:
        where.append("(instr(s.project_path, ?) > 0 OR s.project_slug = ?)")
        params += [project, project]
    if narrow is not None:
        more, more_params = narrow.clauses()
        where += more
        params += more_params
    sql = (
        f"SELECT {_COLUMNS} FROM sessions s"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " ORDER BY s.last_activity_at IS NULL, s.last_activity_at DESC, s.started_at DESC, s.id"
        + (" LIMIT ?" if limit is not None and sort == "last_activity" else "")
    )
    count_sql = "SELECT count(*) FROM sessions s" + (f" WHERE {' AND '.join(where)}" if where else "")
    count_params = tuple(params)
    if limit is not None and sort == "last_activity":
        params.append(min(limit, SQLITE_MAX_INT))  # a larger limit means "all"; SQLite binds 64-bit only
    with storage_errors():
        rates = load_rates(conn)
        rows = [session_row(conn, r, rates) for r in conn.execute(sql, tuple(params)).fetchall()]
        if sort != "last_activity":
            matched = len(rows)
            rows = _sorted(rows, sort)[:limit]
        else:
            matched = len(rows) if limit is None else int(scalar(conn, count_sql, count_params) or 0)
    return {"window": window.to_json(), "sort": sort, "count": len(rows), "matched": matched, "rows": rows}


def _sorted(rows: list[dict[str, Any]], sort: str) -> list[dict[str, Any]]:
    """``rows`` (most recently active first) by ``cost`` (the priced part, exact) or ``tokens``,
    highest first; the sort is stable, so ties stay most recently active first."""
    from decimal import Decimal

    if sort == "cost":
        return sorted(rows, key=lambda r: (Decimal(r["cost_usd"]), r["tokens"]), reverse=True)
    return sorted(rows, key=lambda r: r["tokens"], reverse=True)
