"""Terminal output at 40, 80 (the default when piped) and 120 columns: the columns a table
is for (model ids in full, or without `claude-` and their date where a two-level grouping needs the room and
they stay distinct; session prefixes, titles, every bucket with tokens, tokens, cost) never
disappear or get cut; project paths become their shortest unique suffix, less important columns
give way first and the table says what it hid; below what the rest needs, one block per row."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ingestd.report.cost import cost_report
from ingestd.report.render import render_cost, render_prices, render_sessions, short_path, tokens, usd
from ingestd.report.sessions import sessions_report
from ingestd.report.tree import tree_report
from ingestd.report.treeview import render_tree
from ingestd.report.window import Window, resolve_zone
from ingestd.store import pricing
from ingestd.store.connection import connect
from tests.report.rows import table_rows

UTCZ = resolve_zone("UTC", {})
ALL = Window(None, None)
MODELS = ["claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-mystery-9"]


def _render(width: int, draw: object) -> str:
    console = Console(width=width, record=True, color_system=None)
    draw(console)  # type: ignore[operator]
    text = console.export_text()
    assert max(len(line.rstrip()) for line in text.splitlines()) <= width
    return text


def _first_column(text: str) -> list[str]:
    """The first cell of each body row, with folded continuation lines joined back."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("───")) + 1
    cells: list[str] = []
    for line in lines[start:]:
        if not line.strip() or line.startswith("("):
            break
        fields = re.split(r"\s{2,}", line.strip())
        if len(fields) == 1 and cells and not line.startswith(" "):
            cells[-1] += fields[0]
        elif not line.startswith(" "):
            cells.append(fields[0])
    return cells


WIDTHS = [40, 80, 120]
BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


def _assert_buckets_shown(text: str, doc: dict[str, Any]) -> None:
    """Every row of the answer is a row on screen (the total last), and every bucket with tokens in
    the answer shows each row's value in that row's own cell, as do its tokens and cost."""
    shown = table_rows(text, doc.get("by") or "total")
    want = [*doc["rows"], doc]
    assert len(shown) == len(want), shown
    for r, row in zip(want, shown, strict=True):
        for k in BUCKETS:
            if doc["totals"][k]:
                assert row[k] == tokens(r["totals"][k]), (k, r.get("key"), row)
        assert row["tokens"] == tokens(r["tokens"]) and row["cost"] == usd(r).plain, (r.get("key"), row)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("by", [None, "model", "session", "project", "agent", "day"])
def test_cost_shows_every_non_empty_bucket_at_every_width(report_db: Path, width: int, by: str | None) -> None:
    doc = cost_report(connect(report_db, readonly=True), by=by, window=ALL, zone=UTCZ)
    text = _render(width, lambda c: render_cost(c, doc, None))
    _assert_buckets_shown(text, doc)
    assert tokens(doc["tokens"]) in text and "total" in text
    assert usd(doc).plain == "$0.05+?" and "$0.05+?" in text  # the priced part, marked incomplete
    body = text.splitlines()
    assert not any(not line.strip() for line in body), "an empty line in the table"
    if by == "model":
        assert all(m in text for m in MODELS), "model ids are never cut"


@pytest.mark.parametrize("width", WIDTHS)
def test_cost_without_by_is_one_total_row(report_db: Path, width: int) -> None:
    doc = cost_report(connect(report_db, readonly=True), by=None, window=ALL, zone=UTCZ)
    text = _render(width, lambda c: render_cost(c, doc, None))
    assert sum(1 for line in text.splitlines() if line.startswith("total")) == 1


def test_a_one_hour_cache_write_column_is_never_hidden_at_80() -> None:
    # Regression: `cost --by model` hid the 1-hour cache-write column though it held 604.5k tokens
    row = {
        "key": "claude-sonnet-4-5-20250929",
        "model": "claude-sonnet-4-5-20250929",
        "totals": {
            "input": 17_512,
            "output": 250_933,
            "cache_read": 63_740_000,
            "cache_write_5m": 2_160_000,
            "cache_write_1h": 604_512,
        },
        "tokens": 66_772_957,
        "cost_usd": "63.79",
        "cost_complete": True,
        "unpriced": {},
        "billed_messages": 992,
    }
    doc = {
        **row,
        "by": "model",
        "tz": "UTC",
        "window": {"since": None, "until": None},
        "source": "token_usage_rollup",
        "rows": [row, {**row, "key": "claude-haiku-4-5-20251001", "model": "claude-haiku-4-5-20251001"}],
    }
    text = _render(80, lambda c: render_cost(c, doc, None))
    assert "605k" in text and "wr 1h" in text and "hidden" in text and "c.wr" not in text.split("hidden")[1]
    assert len([line for line in text.splitlines() if line.startswith("claude-")]) == 2, "one line per model"


def test_zero_buckets_are_named_not_dropped_silently(report_db: Path) -> None:
    doc = cost_report(connect(report_db, readonly=True), by="session", window=ALL, zone=UTCZ)
    doc["totals"]["cache_write_1h"] = 0
    for r in doc["rows"]:
        r["totals"]["cache_write_1h"] = 0
    text = _render(80, lambda c: render_cost(c, doc, None))
    assert "(no tokens in: c.wr 1h)" in text


def test_cost_by_agent_shortens_sidechain_ids_unambiguously() -> None:
    def row(agent: str, session: str) -> dict[str, Any]:
        return {
            "key": agent,
            "agent_id": agent,
            "session_id": session,
            "agent_type": "subagent",
            "subagent_type": "general-purpose",
            "project_path": "/p",
            "totals": dict.fromkeys(BUCKETS, 1000),
            "tokens": 5000,
            "cost_usd": "0.01",
            "cost_complete": True,
            "unpriced": {},
            "billed_messages": 1,
        }

    sid = "263940d8-4431-44ba-9f77-4eb54b5f81f0"
    rows = [row(f"sidechain-07609b35-146{i}-4e48-9405-489d2cb36227", sid) for i in range(2)] + [row(sid, sid)]
    doc = {
        **rows[0],
        "by": "agent",
        "tz": "UTC",
        "window": {"since": None, "until": None},
        "source": "token_usage",
        "rows": rows,
        "totals": dict.fromkeys(BUCKETS, 3000),
        "tokens": 15000,
        "billed_messages": 3,
    }
    text = _render(80, lambda c: render_cost(c, doc, None))
    assert "07609b35-1460" in text and "07609b35-1461" in text and "sidechain-" not in text
    assert "main" in text and text.count("263940d8") == 3
    assert len([line for line in text.splitlines() if "263940d8" in line]) == 3, "one line per agent at 80"


@pytest.mark.parametrize("width", WIDTHS)
def test_sessions_show_the_title_prefix_tokens_and_cost_at_every_width(report_db: Path, width: int) -> None:
    doc = sessions_report(connect(report_db, readonly=True), window=ALL)
    text = _render(width, lambda c: render_sessions(c, doc, UTCZ, "/home/dev"))
    shown = [(row["session"], row["tokens"], row["cost"]) for row in table_rows(text, "project")]
    assert shown == [("b2299999", "0", "$0.00"), ("b2222222", "539", "$0.0035+?"), ("a1111111", "6.9k", "$0.04")]
    assert "Refactor" in text, "the title"
    assert not re.search(r"(?<![\d-])\d{2}-\d{2}-\d{2}\b", text), "two-digit years"
    assert "3 sessions" in text
    if width >= 80:
        rows = [line for line in text.splitlines() if re.match(r"^\S+\s+[ab]\d{7}\s", line)]
        assert len(rows) == 3, "one line per session"
        assert all("$" in line for line in rows)
    if width == 120:
        assert "Refactor the parser" in text and "hidden" not in text
        for head in ("project", "title", "started", "last activity", "status", "agents", "tokens", "cost"):
            assert head in text


def test_sessions_with_the_same_last_folder_are_told_apart() -> None:
    def row(i: int, path: str) -> dict[str, Any]:
        return {
            "session_id": f"{i}" * 8 + "-0000",
            "project_path": path,
            "title": None,
            "slug": None,
            "started_at": "2026-02-10T21:54:00.000Z",
            "last_activity_at": "2026-02-10T22:03:00.000Z",
            "status": "completed",
            "agents": 1,
            "tokens": 10,
            "cost_usd": "0",
            "cost_complete": True,
            "unpriced": {},
        }

    paths = ["/home/u/projects/spotter", "/home/u/wt/a/spotter", "/home/u/wt/b/spotter"]
    doc = {"window": {"since": None, "until": None}, "count": 3, "rows": [row(i + 1, p) for i, p in enumerate(paths)]}
    text = _render(80, lambda c: render_sessions(c, doc, UTCZ, None))
    assert "projects/spotter" in text and "a/spotter" in text and "b/spotter" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_pricing_list_keeps_model_ids_whole(report_db: Path, width: int) -> None:
    rows = [r.to_json() for r in pricing.list_prices(connect(report_db, readonly=True), None)]
    text = _render(width, lambda c: render_prices(c, rows))
    assert all(r["model"] in text and r["usd_per_mtok"] in text for r in rows)
    if width >= 80:
        body = [line for line in text.splitlines() if line.startswith("claude-")]
        assert len(body) == len(rows)
        assert all(r["usd_per_mtok"] in line.split() for r, line in zip(rows, body, strict=True))


@pytest.mark.parametrize("width", WIDTHS)
def test_tree_wording_matches_the_json_and_shows_task_descriptions(report_db: Path, width: int) -> None:
    doc = tree_report(connect(report_db, readonly=True), "a1")
    text = _render(width, lambda c: render_tree(c, doc, UTCZ, None))
    flat = " ".join(re.sub(r"[│├└─]", " ", text).split())  # the words, whatever the wrapping
    for words in ("“Find the parser entry points”", "“Rewrite the tokenizer”", "“Refactor the parser”"):
        assert words in flat, words
    assert "1 failed" in flat and "1 interrupted" in flat and "not completed" not in flat
    assert "error (user_interrupt) via directory" in flat and "a-general-2" in flat


def test_short_path_keeps_the_start_of_a_long_last_name() -> None:
    assert short_path("/Users/someone/src/a-very-long-project-name", "/Users/someone", 12) == "a-very-long…"
    assert short_path("/Users/someone/src/project", "/Users/someone", 12) == "…/project"


def test_no_sessions_still_renders() -> None:
    doc = {"window": {"since": None, "until": None}, "count": 0, "rows": []}
    assert "0 sessions" in _render(80, lambda c: render_sessions(c, doc, UTCZ, None))


def test_sessions_show_titles_when_there_is_room(report_db: Path) -> None:
    doc = sessions_report(connect(report_db, readonly=True), window=ALL)
    titled = [r for r in doc["rows"] if r["title"]]
    assert titled
    text = _render(160, lambda c: render_sessions(c, doc, UTCZ, "/home/dev"))
    assert "hidden" not in text and "title" in text
    for r in titled:
        [row] = [line for line in text.splitlines() if r["session_id"][:8] in line]
        assert r["title"][:20] in row


def test_cut_and_cut_start_fit_wide_characters_to_the_cells() -> None:
    from rich.cells import cell_len

    from ingestd.report.short import cut, cut_start

    assert cut("abcdef", 6) == "abcdef" and cut("abcdefgh", 6) == "abcde…"
    assert cut_start("/a/b/spotter", 8) == "…spotter"
    for text in ("日本語のプロジェクト名", "mixed 日本 text here"):
        for width in range(2, 12):
            assert cell_len(cut(text, width)) <= width and cut(text, width).endswith(("…", text[-1]))
            assert cell_len(cut_start(text, width)) <= width


def test_sessions_in_a_window_say_their_cost_is_each_sessions_whole_life(report_db: Path) -> None:
    from datetime import UTC, datetime

    since = Window(datetime(2025, 11, 1, tzinfo=UTC), None)
    doc = sessions_report(connect(report_db, readonly=True), window=since)
    text = _render(80, lambda c: render_sessions(c, doc, UTCZ, None))
    assert "each session's whole life, not only the window" in " ".join(text.split())
    assert "whole life" not in _render(
        80, lambda c: render_sessions(c, sessions_report(connect(report_db, readonly=True), window=ALL), UTCZ, None)
    )
