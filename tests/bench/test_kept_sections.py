"""``bench.run`` keeps the sections other commands measured, each once, however often it runs."""

from __future__ import annotations

from pathlib import Path

from bench.run import kept_sections

ROOT = Path(__file__).resolve().parents[2]


def test_every_kept_section_appears_once_after_runs_again() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    once = kept_sections(text)
    again = kept_sections("# Benchmarks\n\n## Figures\n\n" + once)
    assert again == once
    markers = (
        "<!-- sidebyside:begin -->",
        "<!-- statusline: written",
        "<!-- prio: written",
        "<!-- size:begin -->",
        "<!-- left:begin -->",
        "<!-- team:begin -->",
    )
    for marker in markers:
        assert once.count(marker) == 1, marker


def test_a_section_after_the_team_section_is_not_kept_twice() -> None:
    status = (
        "<!-- statusline: written by `python -m bench.statusline`; kept by bench.run -->\nS\n<!-- /statusline -->\n"
    )
    old = "# B\n<!-- team:begin -->\nT\n<!-- team:end -->\n\n" + status
    assert kept_sections(old).count("<!-- statusline: written") == 1
