"""The sessions list sorts by last activity (the default), cost or tokens, over every matching
session (the read API's order, not the page's), in a real headless Chromium on the real corpus."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tests.browser.conftest import Site
from tests.browser.test_live_view import _filter, open_view


def test_sessions_sort_by_cost_and_tokens(browser: Any, site: Site) -> None:
    open_view(browser, site, "#/sessions", "sessions")
    rows = site.cli("sessions", "--all")["rows"]
    assert len({r["cost_usd"] for r in rows}) > 1, "a data set whose costs differ"
    by_cost = sorted(rows, key=lambda r: (Decimal(r["cost_usd"]), r["tokens"]), reverse=True)
    _filter(browser, "f-sort", "cost", [r["session_id"] for r in by_cost][:200])
    by_tokens = sorted(rows, key=lambda r: r["tokens"], reverse=True)
    _filter(browser, "f-sort", "tokens", [r["session_id"] for r in by_tokens][:200])
    _filter(browser, "f-sort", "last_activity", [r["session_id"] for r in rows][:200])
