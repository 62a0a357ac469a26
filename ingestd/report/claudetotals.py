"""Claude Code's own figures of a session beside ingestd's: its ``cost-state`` totals and its status
line's cost estimate (docs/events.md §2). Read-only.

Claude Code 2.1.3xx writes a ``cost-state`` record into the session's transcript with its running
totals per model (``cc_model_usage``) and in all (``sessions.cc_cost_usd``); its status-line input
carries ``cost.total_cost_usd`` (``rate_limit_samples.cc_cost_usd``). Both are Claude Code's own
accounting: shown beside ingestd's, compared, and never added to it (the billed messages are the
usage, SPEC §4.4). A disagreement is counted, not repaired: the cost-state is Claude Code's totals
when it wrote the record, so work after the last record, or usage ingestd did not read (a file of
the session not under a watched root), makes them differ.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ingestd.report.cost import telemetry_section
from ingestd.report.usage import RateTable, Usage, money
from ingestd.store.connection import Db, storage_errors
from ingestd.store.pricing import BUCKETS
from ingestd.store.rollup import RATE_SQL, SUM_COLUMNS, SUMS_SQL, TIER_SQL

COUNTS = (*BUCKETS, "web_search_requests")
"""What is compared per model: the five buckets' tokens and the web search requests."""

_CC_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "web_search_requests",
)  # in ``COUNTS`` order

COST_TOLERANCE_USD = Decimal("0.000001")
"""Two costs agree within this: Claude Code sums binary floats (11.944739999999921 for 11.94474)."""

_OURS_SQL = (
    "SELECT model, rate_effective_from, tier, speed, inference_geo, "
    + ", ".join(f"sum({c})" for c in SUM_COLUMNS)
    + " FROM token_usage_rollup WHERE session_id = ? GROUP BY 1, 2, 3, 4, 5"
)


def _has_columns(conn: Db) -> bool:
    """Whether the store has the cost-state projection (a local database before it has not; the
    central store is migrated before it is read)."""
    if getattr(conn, "central", False):
        return True
    return "cc_cost_usd" in {str(r[1]) for r in conn.execute("PRAGMA table_info(sessions)")}


def _ours_by_model(conn: Db, sid: str, rates: RateTable) -> dict[str, Usage]:
    out: dict[str, Usage] = {}
    for model, version, tier, speed, geo, *sums in conn.execute(_OURS_SQL, (sid,)):
        out.setdefault(str(model), Usage()).add_messages(
            str(model), version, int(tier), str(speed), sums, rates, str(geo)
        )
    return out


def compare(cc: dict[str, dict[str, int]], ours: dict[str, dict[str, int]]) -> dict[str, list[str]]:
    """Which ``COUNTS`` differ per model, of every model either side names (a side that does not
    name a model has 0 of it): ``{model: [count names that differ]}``, models that agree left out. Pure."""
    out: dict[str, list[str]] = {}
    for model in sorted(set(cc) | set(ours)):
        a, b = cc.get(model, {}), ours.get(model, {})
        differ = [k for k in COUNTS if a.get(k, 0) != b.get(k, 0)]
        if differ:
            out[model] = differ
    return out


def _counts(u: Usage) -> dict[str, int]:
    return {**{b: u.totals.get(b, 0) for b in BUCKETS}, "web_search_requests": u.web_search_requests}


def claude_totals(conn: Db, sid: str, rates: RateTable) -> dict[str, Any]:
    """Claude Code's own figures of session ``sid`` beside ingestd's. Read-only.

    Returns:
        ``{"cost_state": ... | None, "status_line": {"cost_usd", "sampled_at"} | None}``.
        ``cost_state`` (None: no ``cost-state`` record read): ``{"cost_usd"`` (its ``totalCostUSD``,
        float | None), ``"ingestd_cost_usd"`` (exact string), ``"ingestd_cost_complete"``,
        ``"tokens_agree"``, ``"cost_agrees"`` (within ``COST_TOLERANCE_USD``; None when either side
        is not a full figure), ``"models": [{"model", "claude_code": {COUNTS..., "cost_usd"},
        "ingestd": {COUNTS..., "cost_usd"}, "differs": [count names]}]}``. ``status_line``: the
        session's latest status-line snapshot that carried a cost (Claude Code's estimate).

    Raises:
        StorageError: the store refused the read.
    """
    with storage_errors():
        line: list[Any] = conn.execute(
            "SELECT cc_cost_usd, sampled_at FROM rate_limit_samples WHERE session_id = ? AND cc_cost_usd IS NOT NULL"
            " ORDER BY sampled_at DESC, raw_event_id DESC LIMIT 1",
            (sid,),
        ).fetchall()
        status_line = {"cost_usd": float(line[0][0]), "sampled_at": line[0][1]} if line else None
        if not _has_columns(conn):
            return {"cost_state": None, "status_line": status_line}
        total: list[Any] = conn.execute("SELECT cc_cost_usd FROM sessions WHERE id = ?", (sid,)).fetchall()
        cc_rows: list[Any] = conn.execute(
            f"SELECT model, {', '.join(_CC_COLUMNS)}, cost_usd FROM cc_model_usage WHERE session_id = ? ORDER BY model",
            (sid,),
        ).fetchall()
        if not cc_rows and (not total or total[0][0] is None):
            return {"cost_state": None, "status_line": status_line}
        ours = _ours_by_model(conn, sid, rates)
    cc: dict[str, dict[str, int]] = {}
    cc_usd: dict[str, float | None] = {}
    for model, *vals in cc_rows:
        cc[str(model)] = {k: int(v) if v is not None else 0 for k, v in zip(COUNTS, vals[:-1], strict=True)}
        cc_usd[str(model)] = None if vals[-1] is None else float(vals[-1])
    ours_counts = {m: _counts(u) for m, u in ours.items()}
    differs = compare(cc, ours_counts)
    whole = Usage()
    for u in ours.values():
        whole.merge(u)
    cc_total = None if not total or total[0][0] is None else float(total[0][0])
    complete = not whole.unpriced and not whole.unpriced_requests
    agrees = None
    if cc_total is not None and complete:
        agrees = abs(Decimal(repr(cc_total)) - whole.cost_usd) <= COST_TOLERANCE_USD
    models = [
        {
            "model": m,
            "claude_code": {**cc.get(m, dict.fromkeys(COUNTS, 0)), "cost_usd": cc_usd.get(m)},
            "ingestd": {
                **ours_counts.get(m, dict.fromkeys(COUNTS, 0)),
                "cost_usd": money(ours[m].cost_usd) if m in ours else "0",
            },
            "differs": differs.get(m, []),
        }
        for m in sorted(set(cc) | set(ours))
    ]
    return {
        "cost_state": {
            "cost_usd": cc_total,
            "ingestd_cost_usd": money(whole.cost_usd),
            "ingestd_cost_complete": complete,
            "tokens_agree": not differs,
            "cost_agrees": agrees,
            "models": models,
        },
        "status_line": status_line,
    }


def totals_section(conn: Db, rates: RateTable) -> dict[str, int]:
    """How many sessions have a ``cost-state`` and in how many Claude Code's totals differ from
    ingestd's: ``{"sessions", "tokens_differ", "cost_differs"}`` (``cost_differs`` counts only
    sessions whose cost both sides state in full). Read-only; one grouped scan of the rollup rows of
    those sessions."""
    with storage_errors():
        if not _has_columns(conn):
            return {"sessions": 0, "tokens_differ": 0, "cost_differs": 0}
        totals = {
            str(sid): (None if usd is None else float(usd))
            for sid, usd in conn.execute(
                "SELECT id, cc_cost_usd FROM sessions WHERE cc_cost_usd IS NOT NULL"
                " OR id IN (SELECT session_id FROM cc_model_usage)"
            )
        }
        cc: dict[str, dict[str, dict[str, int]]] = {}
        for sid, model, *vals in conn.execute(
            f"SELECT session_id, model, {', '.join(_CC_COLUMNS)} FROM cc_model_usage"
        ):
            cc.setdefault(str(sid), {})[str(model)] = {
                k: int(v) if v is not None else 0 for k, v in zip(COUNTS, vals, strict=True)
            }
        ours: dict[str, dict[str, Usage]] = {}
        for sid, model, version, tier, speed, geo, *sums in conn.execute(
            "SELECT session_id, model, rate_effective_from, tier, speed, inference_geo, "
            + ", ".join(f"sum({c})" for c in SUM_COLUMNS)
            + " FROM token_usage_rollup WHERE session_id IN (SELECT id FROM sessions WHERE cc_cost_usd IS NOT NULL"
            " UNION SELECT session_id FROM cc_model_usage) GROUP BY 1, 2, 3, 4, 5, 6"
        ):
            by_model = ours.setdefault(str(sid), {})
            by_model.setdefault(str(model), Usage()).add_messages(
                str(model), version, int(tier), str(speed), sums, rates, str(geo)
            )
    tokens_differ = cost_differs = 0
    for sid, cc_total in totals.items():
        mine = ours.get(sid, {})
        if compare(cc.get(sid, {}), {m: _counts(u) for m, u in mine.items()}):
            tokens_differ += 1
        whole = Usage()
        for u in mine.values():
            whole.merge(u)
        complete = not whole.unpriced and not whole.unpriced_requests
        if cc_total is not None and complete and abs(Decimal(repr(cc_total)) - whole.cost_usd) > COST_TOLERANCE_USD:
            cost_differs += 1
    return {"sessions": len(totals), "tokens_differ": tokens_differ, "cost_differs": cost_differs}


def totals_line(section: dict[str, int] | None) -> str:
    """``totals_section`` as a sentence. Pure."""
    s = section or {}
    n, t, c = s.get("sessions", 0), s.get("tokens_differ", 0), s.get("cost_differs", 0)
    if not n:
        return "no session has Claude Code's own totals (cost-state, 2.1.3xx)"
    if not t and not c:
        return f"Claude Code's own totals equal ingestd's in all {n} session{'' if n == 1 else 's'} that have them"
    return (
        f"Claude Code's own totals differ from ingestd's in {max(t, c)} of {n} session{'' if n == 1 else 's'}"
        f" (tokens in {t}, cost in {c}): `ingestd tree SESSION` shows both; they are never added"
    )


SHOWN_EVENTS = 20  # disagreeing requests and API errors listed per session (the counts are whole)


def session_telemetry(conn: Db, sid: str, rates: RateTable) -> dict[str, Any] | None:
    """What Claude Code's own telemetry says about session ``sid``, beside ingestd's exact figures,
    never added to them (the usage it alone shows is already in the session's cost, as its own
    ``token_usage`` rows). Read-only.

    Returns:
        None when no telemetry of the session was logged; else ``cost.telemetry_section``'s keys
        (``events``, ``matched``, ``disagreements``, ``otel_only``, ``split_unknown``, ``errors``,
        ``claude_code_cost_usd``, ``metrics``) and ``otel_only_usage`` (the tokens and exact cost of
        the requests no transcript shows), ``disagreeing`` (``[{"occurred_at", "message_id",
        "matched_by", "mismatch"}]``, oldest first), ``api_errors`` (``[{"occurred_at",
        "agent_id", "model", "request_id", "error"}]``, newest first: the session's failed API
        calls, each attributed to its agent where the event names one) and ``errors_by_agent``
        (``{agent id: count}``; ``""`` for an event naming no agent); both lists at most
        ``SHOWN_EVENTS`` long.

    Raises:
        StorageError: the store refused the read.
    """
    with storage_errors():
        if not _has_otel(conn):
            return None
        base = telemetry_section(conn, None, sid)
        if not base["events"] and not base["errors"] and not base["metrics"]:
            return None
        disagreeing = [
            {"occurred_at": at, "message_id": mid, "matched_by": how, "mismatch": why}
            for at, mid, how, why in conn.execute(
                "SELECT occurred_at, message_id, matched_by, mismatch FROM otel_requests"
                " WHERE session_id = ? AND agrees = 0 ORDER BY occurred_at, request_key LIMIT ?",
                (sid, SHOWN_EVENTS),
            )
        ]
        errors = [
            {"occurred_at": at, "agent_id": agent, "model": model, "request_id": rid, "error": err}
            for at, agent, model, rid, err in conn.execute(
                "SELECT occurred_at, agent_id, model, request_id, error FROM otel_requests"
                " WHERE session_id = ? AND event = 'api_error' ORDER BY occurred_at DESC, request_key DESC LIMIT ?",
                (sid, SHOWN_EVENTS),
            )
        ]
        by_agent = {
            str(agent or ""): int(n)
            for agent, n in conn.execute(
                "SELECT agent_id, count(*) FROM otel_requests WHERE session_id = ? AND event = 'api_error'"
                " GROUP BY 1 ORDER BY 1",
                (sid,),
            )
        }
        own = Usage()
        for model, version, tier, speed, geo, *sums in conn.execute(
            f"SELECT t.model, {RATE_SQL}, {TIER_SQL}, t.speed, t.inference_geo, {SUMS_SQL} FROM token_usage t"
            " WHERE t.session_id = ? AND t.claim_rank < 0 GROUP BY 1, 2, 3, 4, 5",
            (sid,),
        ):
            own.add_messages(model, version, int(tier), str(speed), sums, rates, str(geo))
    return {
        **base,
        "otel_only_usage": own.to_json(),
        "disagreeing": disagreeing,
        "api_errors": errors,
        "errors_by_agent": by_agent,
    }


def _has_otel(conn: Db) -> bool:
    if getattr(conn, "central", False):
        return True
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'otel_requests'").fetchall())
