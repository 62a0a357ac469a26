"""``status``, ``verify`` and ``replay`` of the central store (SPEC §13, the checks of SPEC §9/§12).

``replay`` re-folds the whole central log twice (different slice sizes, sessions in opposite
orders) inside one transaction that is always rolled back, and compares per-table digests of every
projection (every column but ``token_usage``'s surrogate id, ordered by primary key) with the live
tables. It holds the projector's advisory lock and the projection tables' locks meanwhile, so a
concurrent ``project`` waits and readers of those tables wait too: run it in a quiet moment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from ingestd.central import migrate as mig
from ingestd.central.pg import PgReadConn, pg_errors
from ingestd.central.project import PROJECT_LOCK, PROJECTION_TABLES, project_store
from ingestd.core.timefmt import format_utc
from ingestd.errors import CheckFailed
from ingestd.projection.verify import MAX_DETAILS, Check
from ingestd.report.status import UNPRICED_SQL, quarantine_section, unpriced_section
from ingestd.report.usage import load_rates
from ingestd.store import rollup

# table -> (columns compared, order): every column except token_usage's surrogate id.
DIGEST: dict[str, tuple[str, str]] = {
    "sessions": ("*", "id"),
    "session_hosts": ("*", "session_id, host_id"),
    "agents": ("*", "session_id, id"),
    "orchestration_edges": ("*", "id"),
    "token_usage": (
        "host_id, session_id, agent_id, message_id, model, input, output, cache_read, cache_write_5m,"
        " cache_write_1h, is_compaction_baseline, occurred_at, claim_rank, prompt_tokens, speed, web_search_requests,"
        " inference_geo",
        "message_id",
    ),
    "token_usage_rollup": ("*", "session_id, model, slot, rate_effective_from, tier, speed, inference_geo, host_id"),
    "tool_calls": ("*", "session_id, tool_use_id"),
    "compactions": ("*", "session_id, boundary_id"),
    "tasks": ("*", "session_id, task_id"),
    "prompts": ("*", "session_id, prompt_id"),
    "cc_model_usage": ("*", "session_id, model"),
    "events": ("*", "raw_event_id"),
    "rate_limit_samples": ("*", "raw_event_id"),
    "otel_requests": ("*", "session_id, request_key"),
    "otel_metric_points": ("*", "raw_event_id"),
    "summaries": ("*", "host_id, origin, origin_gen, origin_offset"),
    "quarantine": ("*", "raw_event_id, reason"),
}
# The local rollup's scan (``ingestd.store.rollup.scan_sql``) per host, in the store's own functions.
ROLLUP_SCAN = rollup.scan_sql(
    "ingestd_slot(t.occurred_at)",
    "ingestd_version(t.model, t.occurred_at)",
    "ingestd_tiers(t.model, t.occurred_at, t.prompt_tokens)",
    keys=("t.host_id",),
)
_ROLLUP_COLS = "host_id, " + rollup.ROLLUP_COLUMNS


def _digest(pg: psycopg.Connection[Any], table: str) -> tuple[int, str]:
    cols, order = DIGEST[table]
    row = pg.execute(
        # one md5 per row, then of those (32 bytes a row): string_agg of the rows' own text would be
        # the whole table in one value, past PostgreSQL's 1 GB limit on a large store
        f"SELECT count(*), md5(COALESCE(string_agg(md5(x::text), '' ORDER BY {order}), ''))"
        f" FROM (SELECT {cols} FROM {table}) x"
    ).fetchone()
    assert row is not None
    return int(row[0]), str(row[1])


def digests(pg: psycopg.Connection[Any]) -> dict[str, tuple[int, str]]:
    """(rows, md5) of every projection table. Read-only."""
    return {t: _digest(pg, t) for t in DIGEST}


def rollup_differences(pg: psycopg.Connection[Any], limit: int = MAX_DETAILS) -> list[str]:
    """Rows where the rollup and a grouped scan of ``token_usage`` differ (empty when equal). Read-only."""
    out = []
    for side, sql in (
        ("stored, not in scan", f"SELECT {_ROLLUP_COLS} FROM token_usage_rollup EXCEPT {ROLLUP_SCAN}"),
        ("in scan, not stored", f"{ROLLUP_SCAN} EXCEPT SELECT {_ROLLUP_COLS} FROM token_usage_rollup"),
    ):
        for r in pg.execute(f"{sql} LIMIT {int(limit)}"):
            out.append(f"rollup {side}: {tuple(r)}")
    return out[:limit]


def _hosts(pg: psycopg.Connection[Any], copies: bool) -> list[dict[str, Any]]:
    """The hosts that shipped here, with their marks, when their log last diverged and when a second
    copy of their database was refused (``copies``: the store has pg migration 0004; else None)."""
    extra = ", diverged_at, refused_at" if copies else ", NULL, NULL"
    return [
        {
            "host_id": r[0],
            "instance": r[1],
            "shipped_through": int(r[2]),
            "rows_shipped": int(r[3]),
            "log_as_of": r[4],
            "last_shipped_at": format_utc(r[5]),
            "diverged_at": format_utc(r[6]) if r[6] else None,
            "refused_at": format_utc(r[7]) if r[7] else None,
            "warning": _copy_warning(r[0], r[7]),
        }
        for r in pg.execute(
            "SELECT host_id, instance, shipped_through, rows_shipped, log_as_of, last_shipped_at"
            f"{extra} FROM hosts ORDER BY host_id"
        )
    ]


def _copy_warning(host_id: str, refused_at: Any) -> str | None:
    if not refused_at:
        return None
    return (
        f"host {host_id}: two databases ship as this host (one database copied to two machines?): the one"
        f" left behind was refused, last at {format_utc(refused_at)}, and its new rows are not here; on that copy run"
        " `ingestd ship --set-host-id NAME`"
    )


def _count(pg: psycopg.Connection[Any], sql: str, params: tuple[Any, ...] = ()) -> int:
    return int((pg.execute(sql, params).fetchone() or (0,))[0])


def _projector(pg: psycopg.Connection[Any]) -> dict[str, Any]:
    """How far the central projector has folded the log."""
    prog = pg.execute("SELECT projected_through, projection_revision FROM projector_progress").fetchone()
    done = int(prog[0]) if prog else 0
    return {
        "projected_through": done,
        "log_max_id": _count(pg, "SELECT COALESCE(max(id), 0) FROM events_raw"),
        "rows_behind": _count(pg, "SELECT count(*) FROM events_raw WHERE id > %s", (done,)),
        "revision": prog[1] if prog else None,
    }


def _by_status(pg: psycopg.Connection[Any], table: str) -> dict[str, Any]:
    return {
        "by_status": {
            str(k): int(n) for k, n in pg.execute(f"SELECT status, count(*) FROM {table} GROUP BY 1 ORDER BY 1")
        }
    }


def status_report(pg: psycopg.Connection[Any], *, now: datetime) -> dict[str, Any]:
    """Health of the central store: ledger, hosts and their marks, projector lag, rows, statuses and the
    quarantined records (``report.status.quarantine_section``: a session the store refused is one).
    Read-only."""
    with pg_errors():
        plan = mig.status(pg)
        applied = mig.applied(pg)
        doc: dict[str, Any] = {
            "now": format_utc(now),
            "store": "postgresql",
            "schema": {
                "version": applied[-1].id if applied else None,
                "name": applied[-1].name if applied else None,
                "pending": [p.stem for p in plan.pending],
                "problems": list(plan.problems),
            },
            "hosts": _hosts(pg, any(a.id >= 4 for a in applied)) if applied else [],
        }
        if not applied:
            return doc
        doc["projector"] = _projector(pg)
        doc["rows"] = {
            t: _count(pg, f"SELECT count(*) FROM {t}")
            for t in ("events_raw", "hosts", *PROJECTION_TABLES, "model_pricing")
        }
        doc["sessions"] = _by_status(pg, "sessions")
        doc["agents"] = _by_status(pg, "agents")
        prices: Any = PgReadConn(pg)  # the reports' connection shape
        doc["unpriced"] = unpriced_section(pg.execute(UNPRICED_SQL), load_rates(prices))
        if any(a.id >= 3 for a in applied):  # pg 0003 made the table
            reader: Any = PgReadConn(pg)  # the reports' connection shape
            doc["quarantine"] = quarantine_section(reader)
    return doc


def _append_only(pg: psycopg.Connection[Any]) -> Check:
    """Probe the log's triggers: UPDATE, DELETE and TRUNCATE must each abort (always rolled back)."""
    row = pg.execute("SELECT min(id) FROM events_raw").fetchone()
    if row is None or row[0] is None:
        have = {
            str(r[0])
            for r in pg.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 'events_raw'::regclass AND NOT tgisinternal"
            )
        }
        want = {"events_raw_no_update", "events_raw_no_delete", "events_raw_no_truncate"}
        missing = sorted(want - have)
        return Check("append_only", not missing, [f"missing trigger {m}" for m in missing] or ["triggers present"])
    problems = []
    for verb, sql in (
        ("UPDATE", "UPDATE events_raw SET event_type = event_type WHERE id = %s"),
        ("DELETE", "DELETE FROM events_raw WHERE id = %s"),
        ("TRUNCATE", "TRUNCATE events_raw CASCADE"),
    ):
        try:
            with pg.transaction():
                pg.execute(sql, (row[0],) if "%s" in sql else None)
                raise psycopg.Rollback()
            problems.append(f"{verb} on events_raw was not refused")
        except psycopg.errors.RaiseException as e:
            if "append-only" not in str(e):
                problems.append(f"{verb} refused for another reason: {str(e).splitlines()[0]}")
    return Check("append_only", not problems, problems or ["UPDATE, DELETE and TRUNCATE of the log are refused"])


def verify_checks(pg: psycopg.Connection[Any]) -> list[Check]:
    """Ledger, append-only log, rollup = scan, projector caught up, hosts' marks consistent. Changes nothing."""
    with pg_errors():
        plan = mig.status(pg)
        problems = list(plan.problems) + [f"central migration pending: pg/{p.stem}" for p in plan.pending]
        checks = [
            Check("ledger", not problems, problems or [f"{len(mig.applied(pg))} central migrations, checksums match"])
        ]
        if problems:
            return checks
        checks.append(_append_only(pg))
        diffs = rollup_differences(pg)
        checks.append(Check("rollup", not diffs, diffs or ["token_usage_rollup equals the grouped scan"]))
        marks = [
            f"host {h}: shipped_through {m} but its newest central row has local id {top}"
            for h, m, top in pg.execute(
                "SELECT h.host_id, h.shipped_through, max(e.local_id) FROM hosts h"
                " JOIN events_raw e ON e.host_id = h.host_id GROUP BY 1, 2 HAVING max(e.local_id) > h.shipped_through"
            )
        ]
        checks.append(Check("watermarks", not marks, marks or ["every host's rows lie within its high-water mark"]))
        lag = pg.execute(
            "SELECT count(*) FROM events_raw WHERE id > (SELECT projected_through FROM projector_progress)"
        ).fetchone()
        behind = int(lag[0]) if lag else 0
        checks.append(
            Check(
                "projected",
                behind == 0,
                [f"{behind} central log rows not folded yet: run `ingestd project --store URL`"]
                if behind
                else ["every central log row is folded"],
            )
        )
    return checks


@dataclass
class ReplayOutcome:
    """Digests of the live projections and of two re-folds, and the tables that differ."""

    live: dict[str, tuple[int, str]]
    rebuilds: list[dict[str, tuple[int, str]]] = field(default_factory=list)
    log_rows: int = 0

    @property
    def differing(self) -> list[str]:
        """Tables whose digests are not all equal."""
        return [t for t in self.live if len({self.live[t], *(r[t] for r in self.rebuilds)}) > 1]

    @property
    def ok(self) -> bool:
        """Every table equal in all three."""
        return not self.differing

    def to_json(self) -> dict[str, Any]:
        """JSON shape: per table the row counts of live and each rebuild, and equality."""
        return {
            "ok": self.ok,
            "store": "postgresql",
            "log_rows": self.log_rows,
            "tables": {
                t: {"rows": [self.live[t][0], *(r[t][0] for r in self.rebuilds)], "equal": t not in self.differing}
                for t in self.live
            },
        }


def replay(pg: psycopg.Connection[Any], *, batch_rows: tuple[int, int] = (5000, 977)) -> ReplayOutcome:
    """Re-fold the central log twice and compare with the live projections; changes nothing.

    Raises:
        CheckFailed: the live projections are behind the log (run ``project --store`` first).
        StorageError: the store refused.
    """
    with pg_errors(), pg.transaction():
        pg.execute("SELECT pg_advisory_xact_lock(%s)", (PROJECT_LOCK,))
        behind = pg.execute(
            "SELECT count(*) FROM events_raw WHERE id > (SELECT projected_through FROM projector_progress)"
        ).fetchone()
        if behind and int(behind[0]):
            raise CheckFailed(
                f"{int(behind[0])} central log rows are not folded yet: run `ingestd project --store URL` first"
            )
        out = ReplayOutcome(digests(pg))
        out.log_rows = int((pg.execute("SELECT count(*) FROM events_raw").fetchone() or (0,))[0])
        for size, reverse in ((batch_rows[0], False), (batch_rows[1], True)):
            # deferred foreign-key checks still queued would make TRUNCATE refuse: run them now
            pg.execute("SET CONSTRAINTS ALL IMMEDIATE")
            pg.execute("TRUNCATE " + ", ".join(PROJECTION_TABLES))
            pg.execute("SET CONSTRAINTS ALL DEFERRED")
            pg.execute("UPDATE projector_progress SET projected_through = 0")
            project_store(pg, batch_rows=size, reverse=reverse)
            out.rebuilds.append(digests(pg))
        raise psycopg.Rollback()  # leaves the transaction block, rolled back: the live tables are untouched
    return out
