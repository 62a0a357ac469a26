"""``GET /metrics``: the Prometheus text format, read from the rollups at scrape time (SPEC §16).

A custom ``prometheus_client`` collector (``RollupCollector``) answers each scrape from the
database itself, so a restart of the daemon loses nothing and two daemons never disagree: the
counters are the log's totals, not the process's. Labels name models, buckets, projects,
statuses and hook events, never a session id (one series per session would grow without bound).

Families (``_total`` is added to counters by the exposition):

- ``ingestd_tokens{model, bucket}``, ``ingestd_cost_usd{model}``, ``ingestd_billed_messages{model}``
  (counters): ``cost --by model``; ``ingestd_unpriced_tokens{model}`` the tokens with no price.
- ``ingestd_project_tokens{project, bucket}``, ``ingestd_project_cost_usd{project}`` (counters):
  ``cost --by project`` (``project`` the real path; ``""`` when unknown).
- ``ingestd_sessions{status}``, ``ingestd_agents{type, status}`` (gauges).
- ``ingestd_hook_events{event}`` (counter): hook deliveries projected, by ``hook_event_name``.
- ``ingestd_log_rows`` (counter): the log's newest row id; ``ingestd_transcript_lines`` (counter):
  transcript lines read (``ingest_stats``).
- ``ingestd_last_log_row_timestamp_seconds``, ``ingestd_last_hook_timestamp_seconds`` (gauges, Unix
  seconds): the lag is ``time() - ...``.
- ``ingestd_plan_limit_used_percent{window}``, ``..._resets_at_timestamp_seconds{window}``,
  ``..._sampled_at_timestamp_seconds{window}`` (gauges; ``five_hour``, ``seven_day``): Claude Code's
  official figures from the newest status-line sample carrying them; no sample, no series.

A database with migrations pending, or whose projections are being re-projected, has no true
figures: ``Unavailable`` (the route answers 503 with the reason).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC
from decimal import Decimal
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from ingestd.core.timefmt import parse
from ingestd.projection.reproject import stale_projection
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, Zone
from ingestd.store import migrate
from ingestd.store.connection import Db, scalar, storage_errors

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
UTC_ZONE = Zone("UTC", UTC)  # the rollup is read whole: no local days


class Unavailable(Exception):
    """The database cannot give true figures now (``reason``: why, for the 503)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def check_ready(conn: Db, db_path: str) -> None:
    """Raise ``Unavailable`` mid-migration: migrations pending, or projections stale (being
    re-projected, or computed by other rules). Read-only."""
    st = migrate.status(conn)
    if st.problems or st.pending:
        names = ", ".join(p.stem for p in st.pending)
        raise Unavailable("; ".join(st.problems) or f"migrations pending: {names}")
    stale = stale_projection(conn, db_path)
    if stale is not None and not stale.newer:
        raise Unavailable(stale.message())


def _seconds(stamp: Any) -> float | None:
    dt = parse(stamp)
    return None if dt is None else dt.timestamp()


class RollupCollector(Collector):
    """The families of the module docstring, read from ``conn`` at each ``collect()``. Read-only."""

    def __init__(self, conn: Db) -> None:
        self.conn = conn

    def collect(self) -> Iterator[Metric]:
        conn = self.conn
        everything = Window(None, None)
        with storage_errors():
            by_model = cost_report(conn, by="model", window=everything, zone=UTC_ZONE)
            by_project = cost_report(conn, by="project", window=everything, zone=UTC_ZONE)
            tokens = CounterMetricFamily(
                "ingestd_tokens", "Billed tokens, by model and bucket.", labels=["model", "bucket"]
            )
            cost = CounterMetricFamily(
                "ingestd_cost_usd", "Cost in USD of the priced tokens, by model.", labels=["model"]
            )
            messages = CounterMetricFamily("ingestd_billed_messages", "Billed messages, by model.", labels=["model"])
            unpriced = CounterMetricFamily(
                "ingestd_unpriced_tokens", "Tokens of a model with no price (not in cost).", labels=["model"]
            )
            for row in by_model["rows"]:
                model = str(row["key"])
                for bucket, n in row["totals"].items():
                    tokens.add_metric([model, bucket], n)
                cost.add_metric([model], float(Decimal(row["cost_usd"])))
                messages.add_metric([model], row["billed_messages"])
                unpriced.add_metric([model], sum(u["tokens"] for u in row["unpriced"].values()))
            yield from (tokens, cost, messages, unpriced)
            ptokens = CounterMetricFamily(
                "ingestd_project_tokens", "Billed tokens, by project and bucket.", labels=["project", "bucket"]
            )
            pcost = CounterMetricFamily("ingestd_project_cost_usd", "Cost in USD, by project.", labels=["project"])
            for row in by_project["rows"]:
                project = str(row["key"])
                for bucket, n in row["totals"].items():
                    ptokens.add_metric([project, bucket], n)
                pcost.add_metric([project], float(Decimal(row["cost_usd"])))
            yield from (ptokens, pcost)
            sessions = GaugeMetricFamily("ingestd_sessions", "Sessions, by status.", labels=["status"])
            for st, n in conn.execute("SELECT status, count(*) FROM sessions GROUP BY 1 ORDER BY 1"):
                sessions.add_metric([str(st)], int(n))
            agents = GaugeMetricFamily("ingestd_agents", "Agents, by type and status.", labels=["type", "status"])
            for t, st, n in conn.execute("SELECT type, status, count(*) FROM agents GROUP BY 1, 2 ORDER BY 1, 2"):
                agents.add_metric([str(t), str(st)], int(n))
            hooks = CounterMetricFamily("ingestd_hook_events", "Hook deliveries, by event.", labels=["event"])
            for ev, n in conn.execute("SELECT event_type, count(*) FROM events GROUP BY 1 ORDER BY 1"):
                hooks.add_metric([str(ev)], int(n))
            yield from (sessions, agents, hooks)
            yield CounterMetricFamily(
                "ingestd_log_rows",
                "Rows in the log (its newest id).",
                value=int(scalar(conn, "SELECT max(id) FROM events_raw") or 0),
            )
            lines = scalar(conn, "SELECT value FROM ingest_stats WHERE name = 'lines'")
            yield CounterMetricFamily("ingestd_transcript_lines", "Transcript lines read.", value=int(lines or 0))
            last_row = _seconds(scalar(conn, "SELECT received_at FROM events_raw ORDER BY id DESC LIMIT 1"))
            last_hook = _seconds(scalar(conn, "SELECT max(occurred_at) FROM events"))
            for name, value, doc in (
                ("ingestd_last_log_row_timestamp_seconds", last_row, "When the newest log row was received (Unix s)."),
                ("ingestd_last_hook_timestamp_seconds", last_hook, "When the newest hook event occurred (Unix s)."),
            ):
                gauge = GaugeMetricFamily(name, doc, labels=[])  # no sample while nothing has arrived
                if value is not None:
                    gauge.add_metric([], value)
                yield gauge
            yield from _plan_limits(conn)


def _plan_limits(conn: Db) -> Iterator[Metric]:
    """Claude Code's official plan limits from the newest status-line sample of each window."""
    used = GaugeMetricFamily(
        "ingestd_plan_limit_used_percent", "Plan limit used, per window (official, Claude Code's).", labels=["window"]
    )
    resets = GaugeMetricFamily(
        "ingestd_plan_limit_resets_at_timestamp_seconds", "When the window resets (Unix s).", labels=["window"]
    )
    sampled = GaugeMetricFamily(
        "ingestd_plan_limit_sampled_at_timestamp_seconds", "When the figure was sampled (Unix s).", labels=["window"]
    )
    for window in ("five_hour", "seven_day"):
        row = conn.execute(
            f"SELECT sampled_at, {window}_pct, {window}_resets_at FROM rate_limit_samples"
            f" WHERE {window}_pct IS NOT NULL ORDER BY sampled_at DESC, raw_event_id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            continue  # no sample while Claude Code has not reported the window (API keys never do)
        used.add_metric([window], float(row[1]))
        for family, stamp in ((sampled, row[0]), (resets, row[2])):
            at = _seconds(stamp)
            if at is not None:
                family.add_metric([window], at)
    yield from (used, resets, sampled)


def exposition(conn: Db, db_path: str) -> bytes:
    """The text format of ``RollupCollector`` over ``conn`` (``check_ready`` first). Read-only.

    Raises:
        Unavailable: as ``check_ready``.
        StorageError: the database cannot be read.
    """
    check_ready(conn, db_path)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RollupCollector(conn))
    return bytes(generate_latest(registry))
