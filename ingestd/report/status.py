"""``ingestd status``: database and ingestion health at a glance (SPEC §9).

Everything here is read-only. ``now`` (the clock) is passed in; the tail lag compares the
checkpoints with the transcript files' sizes on disk only when ``stat_files`` is set.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ingestd.core.timefmt import format_utc, parse
from ingestd.core.validate import FUTURE_DETAIL
from ingestd.report.claudetotals import totals_section
from ingestd.report.search import index_size
from ingestd.report.usage import UNPRICED, RateTable, Usage, load_rates
from ingestd.store.connection import Db, scalar, storage_errors
from ingestd.store.identity import shipped_through, stored_identity
from ingestd.store.pricing import BUCKETS
from ingestd.store.rollup import SUM_COLUMNS
from ingestd.store.watchdog_pass import effective_window

ACTIVE_STATUSES = ("working", "waiting")


def _counts(conn: Db, sql: str) -> dict[str, int]:
    return {str(k): int(n) for k, n in conn.execute(sql)}


def _schema(conn: Db) -> dict[str, Any]:
    has_ledger = scalar(conn, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_version'")
    if not has_ledger:
        return {"version": None, "name": None, "applied_at": None}
    row = conn.execute("SELECT id, name, applied_at FROM schema_version ORDER BY id DESC LIMIT 1").fetchall()
    if not row:
        return {"version": None, "name": None, "applied_at": None}
    return {"version": row[0][0], "name": row[0][1], "applied_at": row[0][2]}


def _database(conn: Db, db_path: Path | None) -> dict[str, Any]:
    page_size = int(scalar(conn, "PRAGMA page_size") or 0)
    pages = int(scalar(conn, "PRAGMA page_count") or 0)
    free = int(scalar(conn, "PRAGMA freelist_count") or 0)
    out: dict[str, Any] = {
        "path": None if db_path is None else str(db_path),
        "size_bytes": page_size * pages,
        "free_bytes": page_size * free,
        "wal_bytes": None,
        "search": index_size(conn),
    }
    if db_path is not None:
        wal = Path(str(db_path) + "-wal")
        out["wal_bytes"] = wal.stat().st_size if wal.exists() else 0
    return out


def _tail(conn: Db, now: datetime, last_ingest: str | None, stat_files: bool) -> dict[str, Any]:
    files = 0
    behind_recorded = 0
    behind_now = 0
    files_behind = 0
    missing = 0
    for root, origin, committed, size in conn.execute(
        "SELECT root, origin, committed_offset, size FROM ingest_checkpoints"
    ):
        files += 1
        behind_recorded += max(0, int(size) - int(committed))
        if stat_files:
            try:
                on_disk = os.stat(os.path.join(root, origin)).st_size
            except OSError:
                missing += 1
                continue
            if on_disk > int(committed):
                files_behind += 1
                behind_now += on_disk - int(committed)
    last = parse(last_ingest) if last_ingest else None
    return {
        "files_tracked": files,
        "bytes_behind_at_last_read": behind_recorded,
        "bytes_behind_on_disk": behind_now if stat_files else None,
        "files_behind_on_disk": files_behind if stat_files else None,
        "files_missing_on_disk": missing if stat_files else None,
        "seconds_since_last_ingest": None if last is None else round((now - last).total_seconds(), 3),
    }


QUARANTINE_LISTED = 20  # the newest records listed; the counts cover all of them


def quarantine_section(conn: Db, *, limit: int = QUARANTINE_LISTED) -> dict[str, Any]:
    """The quarantined records (SPEC §12): counted per reason, the newest ``limit`` listed. Read-only.

    Args:
        conn: a local database, or the central store (``PgReadConn``, whose schema has the table).

    Returns:
        ``{"records": int, "by_reason": {reason: int}, "listed": [{"raw_event_id", "reason",
        "session_id", "origin", "origin_offset", "detail"}, ...]}`` newest first. A database
        without the table (before migration 0008) has none.
    """
    central = getattr(conn, "central", False)
    if not central and not scalar(
        conn, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'quarantine'"
    ):
        return {"records": 0, "by_reason": {}, "listed": []}
    by_reason = _counts(conn, "SELECT reason, count(*) FROM quarantine GROUP BY 1 ORDER BY 1")
    listed = [
        {
            "raw_event_id": rid,
            "reason": reason,
            "session_id": sid,
            "origin": origin,
            "origin_offset": offset,
            "detail": detail,
        }
        for rid, reason, sid, origin, offset, detail in conn.execute(
            "SELECT raw_event_id, reason, session_id, origin, origin_offset, detail FROM quarantine"
            " ORDER BY raw_event_id DESC, reason LIMIT ?",
            (limit,),
        )
    ]
    return {"records": sum(by_reason.values()), "by_reason": by_reason, "listed": listed}


def _as_of(daemon: dict[str, Any] | None, *stamps: str | None) -> str | None:
    """When the statuses were last kept current: None while a daemon answers, else the latest of
    its clean stop and the last commit (a stopped daemon's "working" agents are as of then)."""
    if daemon is not None and daemon.get("running"):
        return None
    known = [t for t in (daemon.get("stopped_at") if daemon else None, *stamps) if t]
    return max(known, default=None)


def _host(conn: Db, logged: int, ship_to: str | None) -> dict[str, Any]:
    """This machine's identity (created once, on the first write) and its team-mode shipping mark.

    ``logged``: the ``events_raw`` row count, the unshipped rows when nothing is shipped (the
    counting of ``id > mark`` walks the table's pages; the plain count reads an index).
    ``team_mode``: a ``ship_to`` is set or something was ever shipped; otherwise shipping is not
    set up and the unshipped count means nothing to the user (the view then says nothing of it).
    """
    ident = stored_identity(conn)
    mark = shipped_through(conn)
    behind = logged if not mark else int(scalar(conn, "SELECT count(*) FROM events_raw WHERE id > ?", (mark,)) or 0)
    return {
        "host_id": ident.get("host_id"),
        "instance": ident.get("instance"),
        "shipped_through": mark,
        "unshipped_rows": behind,
        "team_mode": bool(ship_to) or mark > 0,
    }


def status_report(
    conn: Db,
    *,
    now: datetime,
    db_path: Path | None = None,
    stat_files: bool = False,
    daemon: dict[str, Any] | None = None,
    ship_to: str | None = None,
) -> dict[str, Any]:
    """Health of the database, of ingestion and of the daemon. Read-only.

    Args:
        conn: a read connection.
        now: the current time (aware), for lags.
        db_path: the database file, for its path and WAL size.
        stat_files: compare tail checkpoints with the files on disk (reads the filesystem).
        daemon: the daemon's presence (``ingestd.daemon.presence.Presence.to_json``), or None
            when it was not looked for. ``ship_to``: the setting (team mode's store), None when unset.

    Returns:
        ``{"now", "daemon", "live", "as_of", "schema", "database", "host", "rows", "sessions", "agents",
        "last_ingest_at", "last_hook_at", "last_commit_at", "tail", "watchdog", "skipped", "oversized", "counters",
        "unpriced", "last_prune", "backup", "quarantine", "notices", "claude_totals"}``; ``notices`` is
        ``notices_section``; ``claude_totals`` is ``report.claudetotals.totals_section`` (the sessions
        whose Claude Code cost-state differs from ingestd's, counted);
        ``skipped`` is ``{"lines": int, "by_reason": {reason: int}}`` (the reasons break the lines down);
        ``oversized`` is ``{"lines": int}``, the transcript lines longer than ``max_line_bytes`` logged
        as marker rows (``ingest --json``'s ``oversized``);
        ``quarantine`` is ``quarantine_section``. ``live`` is true
        while a daemon answers; otherwise the statuses (``sessions``, ``agents``) are only as current as
        ``as_of`` (canonical UTC: the daemon's clean stop or the last commit, whichever is later), and
        nothing updates them.
    """
    with storage_errors():
        sessions_by_status = _counts(conn, "SELECT status, count(*) FROM sessions GROUP BY 1 ORDER BY 1")
        seen = _last_seen(conn)
        counters = _counts(conn, "SELECT name, value FROM ingest_stats ORDER BY name")
        rows = _row_counts(conn)
        return {
            "now": format_utc(now),
            "daemon": daemon,
            "live": bool(daemon and daemon.get("running")),
            "as_of": _as_of(daemon, seen["last_commit_at"], seen["last_hook_at"], seen["last_ingest_at"]),
            "schema": _schema(conn),
            "database": _database(conn, db_path),
            "host": _host(conn, rows.get("events_raw", 0), ship_to),
            "rows": rows,
            "sessions": {"by_status": sessions_by_status, "active": _active(sessions_by_status)},
            "agents": {"by_status": _counts(conn, "SELECT status, count(*) FROM agents GROUP BY 1 ORDER BY 1")},
            "notices": notices_section(conn),
            "claude_totals": totals_section(conn, load_rates(conn)),
            **seen,
            "tail": _tail(conn, now, seen["last_ingest_at"], stat_files),
            "watchdog": {"window_s": effective_window(conn), **clock_section(conn, now)},
            **_marked_lines(conn, counters),
            "counters": counters,
            "unpriced": unpriced_section(conn.execute(UNPRICED_SQL), load_rates(conn)),
            "last_prune": _last_prune(conn),
            "backup": _backup(conn),
            "quarantine": quarantine_section(conn),
        }


def notices_section(conn: Db) -> dict[str, int]:
    """The ``<task-notification>`` task ids that name no agent (``sessions.unmatched_notices``):
    ``{"unmatched": int, "sessions": int}`` (how many, in how many sessions; both 0 on a database
    older than the column). Such a notice is kept in the log and counted, never made an agent.
    Read-only."""
    with storage_errors():
        cols = {str(r[1]) for r in conn.execute("PRAGMA table_info(sessions)")}
        if "unmatched_notices" not in cols:
            return {"unmatched": 0, "sessions": 0}
        n, k = conn.execute(
            "SELECT coalesce(sum(unmatched_notices), 0), count(*) FROM sessions WHERE unmatched_notices > 0"
        ).fetchall()[0]
        return {"unmatched": int(str(n)), "sessions": int(str(k))}


def notices_line(section: dict[str, int] | None) -> str:
    """``notices_section`` as a sentence. Pure."""
    n = (section or {}).get("unmatched", 0)
    if not n:
        return "every task-notification names an agent"
    k = (section or {}).get("sessions", 0)
    return (
        f"{n} task-notification{'' if n == 1 else 's'} in {k} session{'' if k == 1 else 's'} name no agent"
        " (a background shell's task, or an agent whose transcript was not read): kept in the log, no agent made"
    )


# The detail ``core.validate.note_time`` writes for a record time after its line's read time.
_FUTURE_DETAIL = f"%{FUTURE_DETAIL}%"


def clock_section(conn: Db, now: datetime) -> dict[str, Any]:
    """Signs that a clock was wrong: ``future_receipts_until`` (the log's newest receipt time when
    it is after ``now``: read while the clock was ahead; the watchdog caps its reference at the
    clock) and ``refused_future_timestamps`` (records dated more than a day after their read time,
    quarantined: many of them suggest this machine's clock was behind)."""
    newest = scalar(conn, "SELECT value FROM meta WHERE key = 'log_as_of'")
    refused = scalar(
        conn, "SELECT count(*) FROM quarantine WHERE reason = 'timestamp' AND detail LIKE ?", (_FUTURE_DETAIL,)
    )
    ahead = isinstance(newest, str) and newest > format_utc(now)
    return {"future_receipts_until": newest if ahead else None, "refused_future_timestamps": int(refused or 0)}


def clock_warnings(wd: dict[str, Any]) -> list[str]:
    """The warnings of a ``clock_section`` (``status``'s ``watchdog``) as sentences; none when clear. Pure."""
    out = []
    if wd.get("future_receipts_until"):
        out.append(
            f"the log holds receipt times up to {wd['future_receipts_until']}, after now: they were read "
            "while the clock was ahead (the watchdog uses the clock, not them, until then)"
        )
    n = wd.get("refused_future_timestamps") or 0
    if n:
        out.append(
            f"{n} record time{'' if n == 1 else 's'} refused as more than a day after the line was read "
            "(usage counted, dated by the nearest valid time): if many, this machine's clock "
            "may be behind; fix it (those dates stay inferred)"
        )
    return out


def _active(by_status: dict[str, int]) -> int:
    return sum(by_status.get(s, 0) for s in ACTIVE_STATUSES)


def _last_seen(conn: Db) -> dict[str, str | None]:
    """``last_ingest_at`` (a transcript line or checkpoint), ``last_hook_at``, ``last_commit_at``."""
    last_line = scalar(conn, "SELECT received_at FROM events_raw WHERE source = 'jsonl' ORDER BY id DESC LIMIT 1")
    last_ckpt = scalar(conn, "SELECT max(updated_at) FROM ingest_checkpoints")
    return {
        "last_ingest_at": max((t for t in (last_line, last_ckpt) if t), default=None),
        "last_hook_at": scalar(conn, "SELECT max(occurred_at) FROM events"),
        "last_commit_at": scalar(conn, "SELECT received_at FROM events_raw ORDER BY id DESC LIMIT 1"),
    }


def _row_counts(conn: Db) -> dict[str, int]:
    """Rows of every table and view (the log ``events_raw`` is a view over ``log_rows``), by name
    (``sqlite_%`` tables, virtual tables and their shadow tables left out)."""
    sql = (
        "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type IN ('table', 'view')"
        " AND name NOT LIKE 'sqlite_%'"
    )
    tables = sorted(r[0] for r in conn.execute(sql))
    # the view's rows are log_rows' (one each): counted there, without the view's joins
    source = {"events_raw": "log_rows"} if "log_rows" in tables else {}
    return {t: int(scalar(conn, f'SELECT count(*) FROM "{source.get(t, t)}"') or 0) for t in tables}


def _marked_lines(conn: Db, counters: dict[str, int]) -> dict[str, Any]:
    """``{"skipped": _skipped(...), "oversized": {"lines"}}`` from one count of the log's marked rows."""
    marked = _counts(
        conn, "SELECT event_type, count(*) FROM events_raw WHERE event_type IN ('invalid', 'oversized') GROUP BY 1"
    )
    return {"skipped": _skipped(marked.get("invalid", 0), counters), "oversized": {"lines": marked.get("oversized", 0)}}


def _skipped(invalid_lines: int, counters: dict[str, int]) -> dict[str, Any]:
    """``{"lines", "by_reason"}``: each skipped line is one 'invalid' log row; the writer's
    ``skipped.<reason>`` counters break the same lines down by reason (they are not more lines)."""
    by_reason: dict[str, int] = {}
    for name, value in counters.items():
        if name.startswith("skipped") and value:
            reason = name.split(".", 1)[1] if "." in name else name
            by_reason[reason] = by_reason.get(reason, 0) + value
    return {"lines": max(invalid_lines, sum(by_reason.values())), "by_reason": by_reason}


# Usage per (model, price version) from the rollup, for the buckets with no rate row at all; both
# stores run this text.
UNPRICED_SQL = (
    "SELECT model, rate_effective_from, "
    + ", ".join(f"sum({c})" for c in SUM_COLUMNS)
    + " FROM token_usage_rollup GROUP BY 1, 2"
)


def unpriced_section(rows: Iterable[Sequence[Any]], rates: RateTable) -> dict[str, Any]:
    """The ``unpriced`` section (``Usage.unpriced_json``) from the rows of ``UNPRICED_SQL``: each
    bucket with no rate row at its version (``rates``, ``load_rates``). Pure."""
    unpriced = Usage()
    for model, version, *sums in rows:
        for i, bucket in enumerate(BUCKETS):
            if rates.bucket_rate(model, bucket, version) == UNPRICED:
                unpriced.add(model, bucket, UNPRICED, int(sums[i]), int(sums[5]), RateTable())
    return unpriced.unpriced_json()


def _last_prune(conn: Db) -> dict[str, Any] | None:
    """The newest real (not dry-run) prune receipt, or None."""
    prune = conn.execute(
        "SELECT ran_at, target, cutoff, rows FROM prune_receipts WHERE dry_run = 0 ORDER BY ran_at DESC, id DESC"
        " LIMIT 1"
    ).fetchall()
    if not prune:
        return None
    return {"ran_at": prune[0][0], "target": prune[0][1], "cutoff": prune[0][2], "rows": prune[0][3]}


def _backup(conn: Db) -> dict[str, Any]:
    """The ``meta`` keys ``last_backup*``, ``last_backup_at`` always present."""
    backup = _counts(conn, "SELECT key, 0 FROM meta WHERE key LIKE 'last_backup%'")
    backup_doc = {k: scalar(conn, "SELECT value FROM meta WHERE key = ?", (k,)) for k in sorted(backup)}
    return {"last_backup_at": backup_doc.get("last_backup_at"), **backup_doc}
