"""Terminal tables at 80 columns (the default when piped) and 40: the columns a table is for
(model ids in full, session prefixes, tokens, cost) never disappear or get cut; project paths are
shortened, less important columns wrap or give way first, and the table says what it hid."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from ingestd.report.cost import cost_report
from ingestd.report.render import render_cost, render_prices, render_sessions, short_path
from ingestd.report.sessions import sessions_report
from ingestd.report.window import Window, resolve_zone
from ingestd.store import pricing
from ingestd.store.connection import connect

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


@pytest.mark.parametrize("width", [80, 40])
def test_cost_by_model_keeps_model_ids_whole_with_tokens_and_cost(report_db: Path, width: int) -> None:
    doc = cost_report(connect(report_db, readonly=True), by="model", window=ALL, zone=UTCZ)
    text = _render(width, lambda c: render_cost(c, doc, None))
    assert sorted(_first_column(text)) == sorted(MODELS)
    assert "…" not in text
    assert "tokens" in text and "7.4k" in text and "$0.05+?" in text
    assert "unpriced" in text
    if width == 80:
        assert all(m in text for m in MODELS)
        assert "input" in text and "output" in text
    else:
        assert "(hidden to fit 40 columns: msgs" in text


@pytest.mark.parametrize("width", [80, 40])
def test_cost_by_session_keeps_the_prefix_and_enough_of_the_project(report_db: Path, width: int) -> None:
    doc = cost_report(connect(report_db, readonly=True), by="session", window=ALL, zone=UTCZ)
    text = _render(width, lambda c: render_cost(c, doc, None))
    assert _first_column(text) == ["a1111111", "b2222222"]
    assert "alpha" in text and "beta" in text
    assert "$0.04" in text and "$0.0035+?" in text and "6.9k" in text


@pytest.mark.parametrize("width", [80, 40])
def test_sessions_keep_prefix_tokens_cost_and_four_digit_years(report_db: Path, width: int) -> None:
    doc = sessions_report(connect(report_db, readonly=True), window=ALL)
    text = _render(width, lambda c: render_sessions(c, doc, UTCZ, "/home/dev"))
    for prefix, tok, cost in (
        ("b2299999", "0", "$0.00"),
        ("b2222222", "539", "$0.0035+?"),
        ("a1111111", "6.9k", "$0.04"),
    ):
        [row] = [line for line in text.splitlines() if prefix in line]
        assert tok in row.split() and cost in row.split()
    assert not re.search(r"(?<![\d-])\d{2}-\d{2}-\d{2}\b", text), "two-digit years"
    assert "3 sessions" in text
    if width == 80:
        for head in ("project", "started", "activity", "status", "agents", "tokens", "cost"):
            assert head in text
        assert "2025-03-09" in text and "04:40" in text and "completed" in text
        # the session title is the first column to give way (SPEC §4.1; shown on a wider terminal)
        assert "hidden to fit 80 columns: title;" in text and text.count("hidden") == 1
    else:
        assert "hidden to fit 40 columns" in text and "started" in text


@pytest.mark.parametrize("width", [80, 40])
def test_pricing_list_keeps_model_ids_whole_one_line_per_row_at_80(report_db: Path, width: int) -> None:
    rows = [r.to_json() for r in pricing.list_prices(connect(report_db, readonly=True), None)]
    text = _render(width, lambda c: render_prices(c, rows))
    models = _first_column(text)
    assert models == [r["model"] for r in rows]
    if width == 80:
        body = [line for line in text.splitlines() if line.startswith("claude-")]
        assert len(body) == len(rows)
        assert all(r["usd_per_mtok"] in line.split() for r, line in zip(rows, body, strict=True))


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
