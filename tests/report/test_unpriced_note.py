"""The unpriced note names each reason with its fix and counts web searches."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ingestd.report.render import unpriced_note


def _note(doc: dict[str, Any]) -> str:
    console = Console(record=True, width=400)
    unpriced_note(console, doc)
    return console.export_text()


def test_each_reason_is_named_with_its_fix() -> None:
    doc = {
        "unpriced": {
            "m-fast": {"tokens": 1200, "messages": 2, "web_search_requests": 0, "reasons": ["speed:turbo"]},
            "m-new": {"tokens": 10, "messages": 1, "web_search_requests": 0, "reasons": ["no_rate"]},
            "m-long": {"tokens": 900000, "messages": 1, "web_search_requests": 0, "reasons": ["long_context"]},
        }
    }
    text = _note(doc)
    fast, new, long = text.splitlines()
    assert "speed 'turbo' has no multiplier" in fast and "--speed turbo=X" in fast and "no price row" not in fast
    assert "no price row; add one with `ingestd pricing set` (m-new --effective-from" in new
    assert "long-context" in long and "--long-context BUCKET=USD" in long


def test_a_store_report_names_the_store_command_in_every_fix() -> None:
    reasons = ["no_rate", "speed:turbo", "web_search"]
    doc = {"unpriced": {"m": {"tokens": 5, "messages": 1, "web_search_requests": 1, "reasons": reasons}}}
    console = Console(record=True, width=400)
    unpriced_note(console, doc, store=True)
    line = console.export_text()
    assert line.count("ingestd pricing set --store URL") == 3


def test_unpriced_web_searches_are_counted_not_zero_tokens() -> None:
    doc = {"unpriced": {"m": {"tokens": 0, "messages": 0, "web_search_requests": 3, "reasons": ["web_search"]}}}
    text = _note(doc)
    assert "0 tokens" not in text
    assert "3 web searches" in text and "--web-search-fee" in text
    reasons = ["no_rate", "web_search"]
    both = {"unpriced": {"m": {"tokens": 5, "messages": 1, "web_search_requests": 1, "reasons": reasons}}}
    line = _note(both)
    assert "5 tokens in 1 message and 1 web search" in line
    assert "no price row" in line and "--web-search-fee" in line
