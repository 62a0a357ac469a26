"""``ingestd cost``: totals per bucket, exact cost and unpriced usage, optionally grouped (SPEC §5, §9).

Every grouping except ``agent`` reads ``token_usage_rollup`` only (the five bucket sums per session,
model, UTC quarter-hour slot, price version, tier, speed and inference geo), each bucket priced at its rate row at
that version (``ingestd.report.usage.RateTable.bucket_rate``): the answer never scans
``token_usage``, however long the history.

``--by agent`` and ``--by source`` are the exceptions, said so in the answer (``"source":
"token_usage"``): the rollup has no agent column and does not tell a transcript's message from an
event of Claude Code's telemetry that no transcript explains, so those groupings scan
``token_usage`` (within the window) with the same rate rule the rollup triggers use. ``--by source``
adds ``telemetry`` (``telemetry_section``): how many events matched a transcript message and how
many of those disagree with it, Claude Code's own cost of the events, and its metrics' sums, shown
beside the exact figures, never added to them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from datetime import date
from typing import Any

from ingestd.errors import InputError
from ingestd.report.usage import Usage, load_rates, uncounted_usage, unread_tails
from ingestd.report.window import Window, Zone, range_clauses, slot_day
from ingestd.store.connection import Db, Reader, storage_errors
from ingestd.store.rollup import RATE_SQL, SUM_COLUMNS, SUMS_SQL, TIER_SQL

GROUPINGS = ("day", "week", "month", "model", "session", "project", "agent", "host", "source")
# ``--by source``: where a message's usage comes from. A transcript's message (Claude Code's
# telemetry about it is evidence of it, never added), or an api_request event no transcript
# explains (``ingestd.core.otelfold``: claim_rank RANK_OTEL).
SOURCES = {"transcript": "the transcripts", "otel": "Claude Code's telemetry only (no transcript message)"}
SCANNED = ("agent", "source")  # groupings the rollup cannot answer: they scan token_usage
SEP = "\x1e"  # between the keys of a two-level grouping (``day,model``)
# the groupings by time: each a function of a usage slot's local day (``slot`` itself: blocks)
TIME_GROUPINGS = ("day", "week", "month", "slot")

# (group key expression, FROM clause). Every key is grouped together with model, version, tier, speed, geo.
# The totals (no key) group by those alone, so an index on those columns can serve them.
_ROLLUP_KEYS: dict[str | None, tuple[str | None, str]] = {
    None: (None, "token_usage_rollup r"),
    "model": ("r.model", "token_usage_rollup r"),
    "day": ("r.slot", "token_usage_rollup r"),
    "week": ("r.slot", "token_usage_rollup r"),
    "month": ("r.slot", "token_usage_rollup r"),
    "slot": ("r.slot", "token_usage_rollup r"),
    "session": ("r.session_id", "token_usage_rollup r"),
    "project": (
        "COALESCE(s.project_path, '')",
        "token_usage_rollup r LEFT JOIN sessions s ON s.id = r.session_id",
    ),
}


def host_expr(conn: Reader, alias: str) -> str:
    """The host of a usage row: its ``host_id`` column in the central store (team mode, SPEC §13);
    in a local database, the database's own ``meta.host_id`` (one machine, one host)."""
    if getattr(conn, "central", False):
        return f"{alias}.host_id"
    return "COALESCE((SELECT value FROM meta WHERE key = 'host_id'), '')"


def check_host(conn: Reader, host: str) -> None:
    """Refuse a ``--host`` no usage can have: the central store's ``hosts`` (team mode), else this
    database's own ``meta.host_id``. Read-only.

    Raises:
        InputError: ``reason="not_found"``, naming the known hosts (an unknown id is an input error,
            as an unknown session is for ``tree``, not a $0.00 answer).
    """
    central = getattr(conn, "central", False)
    sql = "SELECT host_id FROM hosts ORDER BY 1" if central else "SELECT value FROM meta WHERE key = 'host_id'"
    known = [str(r[0]) for r in conn.execute(sql) if r[0]]
    if host not in known:
        where = "the central store" if central else "this database"
        raise InputError(
            f"no host {host!r} in {where}; known: {', '.join(known) or 'none yet'} (see `ingestd status`)",
            reason="not_found",
        )


def _key_source(conn: Db, level: str) -> tuple[str | None, str]:
    return (host_expr(conn, "r"), "token_usage_rollup r") if level == "host" else _ROLLUP_KEYS[level]


def _rollup_rows(
    conn: Db, by: str | None, window: Window, host: str | None, session: str | None = None
) -> Iterable[tuple[Any, ...]]:
    """The rollup's sums grouped by the key of ``by`` (one grouping, or two joined by ``,``: their
    keys joined by ``SEP``), model, price version, tier, speed and inference geo."""
    if by is None:
        key, source = _ROLLUP_KEYS[None]
    else:
        parts = [_key_source(conn, level) for level in by.split(",")]
        key = " || char(30) || ".join(str(k) for k, _ in parts)
        joined = [src for _, src in parts if "JOIN" in src]
        source = joined[0] if joined else parts[0][1]
    where, params = range_clauses("r.slot", window.since_slot, "r.slot", window.until_slot)
    if host is not None:
        where.append(f"{host_expr(conn, 'r')} = ?")
        params.append(host)
    if session is not None:
        where.append("r.session_id = ?")
        params.append(session)
    cols = "r.model, r.rate_effective_from, r.tier, r.speed, r.inference_geo"
    sums = ", ".join(f"sum(r.{c})" for c in SUM_COLUMNS)
    sql = (
        f"SELECT {key + ', ' if key else ''}{cols}, {sums}"
        f" FROM {source}"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + f" GROUP BY {key + ', ' if key else ''}{cols}"
    )
    rows = conn.execute(sql, tuple(params))
    return rows if key else (("", *r) for r in rows)


# The group key of the two answers no rollup column holds, read from token_usage itself.
_MESSAGE_KEYS = {
    "agent": "t.session_id || char(31) || COALESCE(t.agent_id, '')",
    "source": "CASE WHEN t.claim_rank < 0 THEN 'otel' ELSE 'transcript' END",
}


def _message_rows(
    conn: Db, by: str, window: Window, host: str | None, session: str | None = None
) -> Iterable[tuple[Any, ...]]:
    """token_usage grouped by ``_MESSAGE_KEYS[by]`` and every pricing fact, in ``_rollup_rows``' shape."""
    where, params = range_clauses("t.occurred_at", window.since_utc, "t.occurred_at", window.until_utc)
    if host is not None:
        where.append(f"{host_expr(conn, 't')} = ?")
        params.append(host)
    if session is not None:
        where.append("t.session_id = ?")
        params.append(session)
    sql = (
        f"SELECT {_MESSAGE_KEYS[by]}, t.model, {RATE_SQL},"
        f" {TIER_SQL}, t.speed, t.inference_geo, {SUMS_SQL} FROM token_usage t"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " GROUP BY 1, 2, 3, 4, 5, 6"
    )
    return conn.execute(sql, tuple(params))


def telemetry_section(conn: Db, window: Window | None, session: str | None = None) -> dict[str, Any]:
    """What Claude Code's own telemetry says about the window (None: all time), beside the exact
    figures. Read-only.

    Returns:
        ``{"events", "matched", "disagreements", "otel_only", "split_unknown", "errors",
        "claude_code_cost_usd", "metrics"}``: api_request events, those a transcript message
        explains (and how many of them disagree with it), those no transcript explains (usage of
        their own), those without a 5m / 1h split, api_error events, the sum of Claude Code's
        ``cost_usd`` of the api_request events, and each metric's sum (``{name: {"unit", "sum",
        "points"}}``, deltas summed), none of it ever added to the cost.
    """
    since, until = (window.since_utc, window.until_utc) if window is not None else (None, None)
    where, params = range_clauses("occurred_at", since, "occurred_at", until)
    if session is not None:
        where.append("session_id = ?")
        params.append(session)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    ((events, matched, disagree, own, unsplit, errors),) = list(
        conn.execute(
            "SELECT count(*) FILTER (WHERE event = 'api_request'), count(message_id),"
            " count(*) FILTER (WHERE agrees = 0), count(usage_id),"
            " count(*) FILTER (WHERE event = 'api_request' AND split_known = 0),"
            f" count(*) FILTER (WHERE event = 'api_error') FROM otel_requests{clause}",
            tuple(params),
        )
    )
    # Floats are summed here, correctly rounded (math.fsum): SQLite and PostgreSQL add doubles in
    # different orders and ways, and the local and central answers must be the same document.
    cc_where = " AND ".join([*where, "event = 'api_request'", "cc_cost_usd IS NOT NULL"])
    costs = [
        float(v) for (v,) in conn.execute(f"SELECT cc_cost_usd FROM otel_requests WHERE {cc_where}", tuple(params))
    ]
    mwhere, mparams = range_clauses("end_at", since, "end_at", until)
    if session is not None:
        mwhere.append("session_id = ?")
        mparams.append(session)
    mclause = f" WHERE {' AND '.join(mwhere)}" if mwhere else ""
    points: dict[str, tuple[str, list[float]]] = {}
    for name, unit, value in conn.execute(f"SELECT name, unit, value FROM otel_metric_points{mclause}", tuple(mparams)):
        unit_of, values = points.setdefault(str(name), (str(unit), []))
        points[str(name)] = (max(unit_of, str(unit)), values)
        values.append(float(value or 0))
    metrics = {
        name: {"unit": unit, "sum": math.fsum(values), "points": len(values)}
        for name, (unit, values) in sorted(points.items())
    }
    return {
        "events": int(events),
        "matched": int(matched),
        "disagreements": int(disagree),
        "otel_only": int(own),
        "split_unknown": int(unsplit),
        "errors": int(errors),
        "claude_code_cost_usd": math.fsum(costs) if costs else None,
        "metrics": metrics,
    }


def _describe_sessions(conn: Db, ids: Iterable[str]) -> dict[str, tuple[str | None, str | None]]:
    out: dict[str, tuple[str | None, str | None]] = {}
    for sid in ids:
        for r in conn.execute("SELECT project_path, started_at FROM sessions WHERE id = ?", (sid,)):
            out[sid] = (r[0], r[1])
    return out


def _describe_agents(conn: Db, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(type, subagent_type) of each agent, keyed by (session_id, agent_id) (SPEC §4.2): one query
    per session, not per agent."""
    wanted = set(keys)
    out: dict[tuple[str, str], tuple[str, str | None]] = {}
    for sid in sorted({k[0] for k in wanted}):
        for aid, kind, subagent_type in conn.execute(
            "SELECT id, type, subagent_type FROM agents WHERE session_id = ?", (sid,)
        ):
            if (sid, aid) in wanted:
                out[(sid, aid)] = (kind, subagent_type)
    return out


def cost_report(
    conn: Db, *, by: str | None, window: Window, zone: Zone, host: str | None = None, session: str | None = None
) -> dict[str, Any]:
    """Cost totals, optionally grouped. Read-only.

    Args:
        conn: a read connection.
        by: None (totals only), one of ``GROUPINGS`` (``slot``: per UTC quarter hour), or two joined
            by ``,`` (``check_by``).
        window: slot-aligned ``[since, until)``.
        zone: the zone whose local days ``by="day"`` groups into.
        host: only usage of this host (``host_id``; a local database is one host).
        session: only usage of this session (its exact id).

    Returns:
        ``{"by", "tz", "window", "source", "totals", "tokens", "cost_usd", "cost_complete", "unpriced",
        "billed_messages", "rows"}``; each row has ``key``, its grouping's fields and the same cost keys.
        ``cost_usd`` is the priced part as an exact decimal string; ``unpriced`` maps model to
        ``{"tokens", "messages"}`` and is never folded into the cost.

    Raises:
        InputError: ``host`` is not a known host (``check_host``).
        StorageError: the database refused the read.
    """
    levels = check_by(by)
    with storage_errors():
        if host is not None:
            check_host(conn, host)
        rates = load_rates(conn)
        if by in _MESSAGE_KEYS:
            raw = _message_rows(conn, by, window, host, session)
        else:
            raw = _rollup_rows(conn, by, window, host, session)
        to_key = _key_function(levels, zone)
        # Sum integers first (cheap), price each (group, model, version, tier, speed, geo) once.
        sums: dict[tuple[str, str, str, int, str, str], list[int]] = {}
        width = len(SUM_COLUMNS)
        for key, model, version, tier, speed, geo, *values in raw:
            acc = sums.setdefault((to_key(key), model, version, int(tier), str(speed), str(geo)), [0] * width)
            for i in range(width):
                acc[i] += values[i]
        groups: dict[str, Usage] = {}
        for (k, model, version, tier, speed, geo), values in sums.items():
            u = groups.get(k)
            if u is None:
                u = groups[k] = Usage()
            u.add_messages(model, version, tier, speed, values, rates, geo)
        total = Usage()
        for u in groups.values():
            total.merge(u)
        total.add_uncounted(
            *uncounted_usage(conn, session=session, since=window.since_utc, until=window.until_utc, host=host)
        )
        total.add_unread(*unread_tails(conn, session=session))
        rows_out = _shape_rows(conn, levels, groups) if levels else []
        extra = {"telemetry": telemetry_section(conn, window, session)} if by == "source" else {}
    return {
        "by": by,
        "tz": zone.name,
        "host": host,
        "window": window.to_json(),
        "source": "token_usage" if by in SCANNED else "token_usage_rollup",
        **total.to_json(),
        "rows": rows_out,
        **extra,
    }


def check_by(by: str | None) -> tuple[str, ...]:
    """The levels of ``by``: none, one of ``GROUPINGS`` (or ``slot``), or two of them joined by ``,``
    (``day,model``: each day's rows by model; ``agent`` stands alone).

    Raises:
        ValueError: an unknown grouping, ``agent`` in two levels, a level twice, or more than two.
    """
    if by is None:
        return ()
    levels = tuple(by.split(","))
    for level in levels:
        if level not in GROUPINGS and level != "slot":
            raise ValueError(f"unknown grouping {level!r}")
    if len(levels) > 2 or len(set(levels)) != len(levels) or (len(levels) == 2 and set(SCANNED) & set(levels)):
        raise ValueError(f"grouping {by!r}: at most two different levels, agent alone and source alone")
    return levels


def iso_week(day: str) -> str:
    """``YYYY-Www``: the ISO week (Monday first) of a local day ``YYYY-MM-DD``."""
    y, w, _ = date.fromisoformat(day).isocalendar()
    return f"{y}-W{w:02d}"


def _key_function(levels: tuple[str, ...], zone: Zone) -> Callable[[str], str]:
    """What a rollup key of ``levels`` becomes: a slot's local day, ISO week or month for the time
    levels, the slot itself for ``slot``, the key as it is for the others."""
    day_cache: dict[str, str] = {}

    def one(level: str) -> Callable[[str], str]:
        if level == "day":
            return lambda s: slot_day(s, zone, day_cache)
        if level == "week":
            return lambda s: iso_week(slot_day(s, zone, day_cache))
        if level == "month":
            return lambda s: slot_day(s, zone, day_cache)[:7]
        return str

    fns = [one(level) for level in levels]
    if len(fns) == 2:
        f1, f2 = fns

        def both(k: str) -> str:
            a, b = k.split(SEP, 1)
            return f1(a) + SEP + f2(b)

        return both
    return fns[0] if fns else str


_FIELD = {"day": "day", "week": "week", "month": "month", "slot": "slot", "model": "model", "host": "host_id"}


def _shape_rows(conn: Db, levels: tuple[str, ...], groups: dict[str, Usage]) -> list[dict[str, Any]]:
    def cost_order(k: str) -> tuple[Any, ...]:
        return (-groups[k].cost_usd, -groups[k].tokens, k)

    if levels[0] in TIME_GROUPINGS:  # time first: in time order, each period's rows by cost
        order = sorted(groups, key=lambda k: (k.split(SEP)[0], *cost_order(k)))
    elif len(levels) == 2:  # the first level's groups by their cost, each group's rows by the second
        firsts: dict[str, Any] = {}
        for k, u in groups.items():
            first = k.split(SEP)[0]
            firsts[first] = firsts.get(first, 0) + u.cost_usd
        second_time = levels[1] in TIME_GROUPINGS
        order = sorted(
            groups,
            key=lambda k: (-firsts[k.split(SEP)[0]], k.split(SEP)[0], *((k,) if second_time else cost_order(k))),
        )
    else:
        order = sorted(groups, key=cost_order)
    if levels == ("agent",):
        return _agent_shape(conn, order, groups)
    at = levels.index("session") if "session" in levels else None
    sessions = _describe_sessions(conn, {k.split(SEP)[at] for k in groups}) if at is not None else {}
    out: list[dict[str, Any]] = []
    for k in order:
        parts = k.split(SEP)
        row: dict[str, Any] = {"key": "/".join(parts) if len(parts) > 1 else k}
        for level, part in zip(levels, parts, strict=True):
            if level == "project":
                row["project_path"] = part or None
            elif level == "session":
                row["session_id"] = part
                row["project_path"], row["started_at"] = sessions.get(part, (None, None))
            elif level == "source":
                row["source"] = part
                row["means"] = SOURCES.get(part)
            else:
                row[_FIELD[level]] = part
        row.update(groups[k].to_json())
        out.append(row)
    return out


def _agent_shape(conn: Db, order: list[str], groups: dict[str, Usage]) -> list[dict[str, Any]]:
    sessions = _describe_sessions(conn, {k.split("\x1f")[0] for k in groups})
    agents = _describe_agents(conn, {(k.split("\x1f")[0], k.split("\x1f")[1]) for k in groups if k.split("\x1f")[1]})
    out: list[dict[str, Any]] = []
    for k in order:
        sid, aid = k.split("\x1f")
        row: dict[str, Any] = {"key": f"{sid}/{aid}" if aid else f"{sid}/(unattributed)"}
        row["session_id"] = sid
        row["agent_id"] = aid or None
        row["project_path"] = sessions.get(sid, (None, None))[0]
        row["agent_type"], row["subagent_type"] = agents.get((sid, aid), (None, None))
        row.update(groups[k].to_json())
        out.append(row)
    return out
