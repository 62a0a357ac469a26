"""Markdown rendering of the results (pure), and the one writer of a marked section of
BENCHMARKS.md (``write_marked``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Row:
    """One line of a results table.

    Attributes:
        what: str, the measurement.
        figure: str, the measured value, formatted (or "not available yet").
        target: str, the SPEC §11 target or reference ("" when there is none).
        verdict: str, "meets", "misses", "n/a" or "".
        note: str, what limits it when it misses, or context.
    """

    what: str
    figure: str
    target: str = ""
    verdict: str = ""
    note: str = ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[Row]) -> str:
    """A GitHub-flavoured markdown table with columns measurement / figure / target / verdict / notes."""
    lines = ["| measurement | figure | SPEC §11 target | verdict | notes |", "|---|---|---|---|---|"]
    for r in rows:
        verdict = f"**{r.verdict}**" if r.verdict == "misses" else r.verdict
        cells = (r.what, r.figure, r.target, verdict, r.note)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def kv_table(pairs: Sequence[tuple[str, str]]) -> str:
    """A two-column markdown table of ``(key, value)`` pairs."""
    lines = ["| | |", "|---|---|"]
    lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in pairs]
    return "\n".join(lines) + "\n"


def write_marked(path: Path, section: str, begin: str, end: str) -> None:
    """Replace (or append) the section of ``path`` between the ``begin`` and ``end`` markers."""
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        start = text.index(begin)
        stop = text.index(end) + len(end) + 1
        text = text[:start] + section + text[stop:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def marked_section(text: str, begin: str, end: str) -> str:
    """The part of ``text`` from the ``begin`` marker through the ``end`` marker, newline-ended ("" when absent)."""
    if begin in text and end in text:
        return text[text.index(begin) : text.index(end) + len(end)] + "\n"
    return ""
