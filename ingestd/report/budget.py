"""The daemon's budget check: the spend the caps are judged against, read from the database.

``BudgetCheck(db_path, caps, zone)`` is called by the hook receiver after a PreToolUse or
UserPromptSubmit delivery is committed (``ingestd.http.hooks``), on a worker thread, and returns
the hook's JSON answer (``ingestd.core.budget.answer``) or None. Spend comes from the rollup, as
``ingestd cost`` computes it: today (local day), this ISO week (from Monday 00:00 local), the
session, and the latest sound official 5-hour percentage (``rate_limit_samples``). The account-wide
figures are cached for ``TTL_S`` seconds, a session's for the same: a burst of tool calls costs one
read, and a cap is seen within ``TTL_S`` of being reached.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from ingestd.core.budget import BLOCKING_EVENTS, Caps, Spend, answer, judge
from ingestd.core.timefmt import format_utc
from ingestd.projection.reproject import stale_projection
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, Zone, make_window
from ingestd.settings import Settings
from ingestd.store.connection import Db, connect, scalar

TTL_S = 2.0


def caps_from(settings: Settings) -> Caps:
    """The caps the ``budget_*`` settings set (every one off by default)."""

    def usd(name: str) -> Decimal | None:
        v = settings.get_opt_float(name)
        return None if v is None else Decimal(str(v))

    def pct(name: str) -> float | None:
        return settings.get_opt_float(name)

    return Caps(
        daily_soft=usd("budget_daily_soft_usd"),
        daily_hard=usd("budget_daily_hard_usd"),
        weekly_soft=usd("budget_weekly_soft_usd"),
        weekly_hard=usd("budget_weekly_hard_usd"),
        session_soft=usd("budget_session_soft_usd"),
        session_hard=usd("budget_session_hard_usd"),
        five_hour_pct_soft=pct("budget_five_hour_soft_pct"),
        five_hour_pct_hard=pct("budget_five_hour_hard_pct"),
    )


def week_start(now: datetime, zone: Zone) -> str:
    """This ISO week's Monday (``YYYY-MM-DD``) in ``zone``."""
    local = now.astimezone(zone.tz).date()
    return (local - timedelta(days=local.weekday())).isoformat()


def _unpriced(doc: dict[str, Any]) -> str | None:
    if doc["cost_complete"]:
        return None
    models = ", ".join(sorted(doc["unpriced"])) or "web search requests"
    return f"usage without a price ({models}) is not in the figure"


Account = tuple[Decimal, Decimal, float | None, str | None]


def account_spend(conn: Db, db_path: Path, now: datetime, zone: Zone) -> Account:
    """``(today USD, this week USD, five-hour percent or None, why unsure or None)``. Read-only."""
    today = cost_report(conn, by=None, window=make_window("today", None, zone, now), zone=zone)
    week = cost_report(conn, by=None, window=make_window(week_start(now, zone), None, zone, now), zone=zone)
    pct = scalar(
        conn,
        "SELECT five_hour_pct FROM rate_limit_samples WHERE five_hour_flag IS NULL AND five_hour_pct IS NOT NULL"
        " AND five_hour_resets_at > ? ORDER BY sampled_at DESC, raw_event_id DESC LIMIT 1",
        (format_utc(now),),
    )
    stale = stale_projection(conn, db_path)
    unsure = stale.message() if stale is not None else _unpriced(week) or _unpriced(today)
    return Decimal(today["cost_usd"]), Decimal(week["cost_usd"]), None if pct is None else float(pct), unsure


def session_spend(conn: Db, session_id: str, zone: Zone) -> tuple[Decimal, str | None]:
    """``(the session's USD, why unsure or None)``. Read-only."""
    doc = cost_report(conn, by=None, window=Window(None, None), zone=zone, session=session_id)
    return Decimal(doc["cost_usd"]), _unpriced(doc)


class BudgetCheck:
    """The receiver's budget check over one database (thread-safe: called from worker threads).

    Args:
        db_path: the database (read through a read-only connection per check).
        caps: the caps (``caps_from``); at least one should be on.
        zone: the zone of "today" and "this week".
        clock: seconds, monotonic (the cache's); wall: the current time (the windows').
    """

    def __init__(
        self,
        db_path: Path,
        caps: Caps,
        zone: Zone,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.db_path = db_path
        self.caps = caps
        self.zone = zone
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._account: tuple[float, Account] | None = None
        self._sessions: dict[str, tuple[float, tuple[Decimal, str | None]]] = {}

    def __call__(self, event: str, session_id: str | None) -> dict[str, Any] | None:
        """The JSON answer to a delivery of ``event`` in ``session_id`` (None: the empty 200).

        Raises:
            StorageError: the database could not be read (the receiver answers the empty 200).
        """
        if event not in BLOCKING_EVENTS:
            return None
        spend = self.spend(session_id)
        return answer(judge(self.caps, spend), event)

    def spend(self, session_id: str | None) -> Spend:
        """The figures the caps are judged against, from the cache when fresh."""
        t = self._clock()
        with self._lock:
            account = self._account if self._account and t - self._account[0] < TTL_S else None
            sess = self._sessions.get(session_id) if session_id else None
            sess = sess if sess and t - sess[0] < TTL_S else None
        need_session = self.caps.needs_session() and session_id is not None and sess is None
        if account is None or need_session:
            conn = connect(self.db_path, readonly=True)
            try:
                if account is None:
                    account = (t, account_spend(conn, self.db_path, self._wall(), self.zone))
                if need_session and session_id is not None:
                    sess = (t, session_spend(conn, session_id, self.zone))
            finally:
                conn.close()
            with self._lock:
                self._account = account
                if sess is not None and session_id is not None:
                    if len(self._sessions) > 1024:
                        self._sessions.clear()
                    self._sessions[session_id] = sess
        daily, weekly, pct, unsure = account[1]
        session, s_unsure = sess[1] if sess is not None else (None, None)
        return Spend(daily, weekly, session, pct, unsure or s_unsure)
