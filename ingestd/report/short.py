"""Shortening names for a narrow terminal without making two of them look the same.

- Project paths become their shortest unique suffix among the paths shown: ``spotter``,
  ``spotter-dov``, ``a/spotter`` beside ``b/spotter`` (never three different projects as ``…/spotter``).
- Agent ids become their shortest unique prefix among the ids shown, at least ``MIN_ID`` characters
  of their hexadecimal part (``sidechain-07609b35`` for ``sidechain-07609b35-1460-...``), so a
  shortened id still names one agent and can be typed where a prefix is accepted.
- Model ids lose ``claude-`` and their ``-YYYYMMDD`` snapshot date (``opus-4-1`` for
  ``claude-opus-4-1-20250805``) when no two models shown would then read the same.
- ``flow`` packs phrases into lines of a width, breaking between phrases, never inside one.
- ``cut`` / ``cut_start`` fit one text to a width, an ellipsis marking the cut end or start.
- ``hang`` lays a list row's long message out under its head, within a width.

Pure functions; ``--json`` always carries the full names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rich.cells import cell_len

MIN_ID = 8
KEEP_WHOLE = 16
_SEP = re.compile(r"[\\/]")
_WORD_PREFIX = re.compile(r"^[A-Za-z]+-")


def _parts(path: str) -> list[str]:
    return [p for p in _SEP.split(path) if p]


def unique_suffixes(paths: Iterable[str | None]) -> dict[str, str]:
    """Each distinct path's shortest suffix of whole components that no other path shown ends with.

    ``/x/a/spotter`` and ``/x/b/spotter`` give ``a/spotter`` and ``b/spotter``; a path that is a
    suffix of another (``/spotter`` and ``/a/spotter``) keeps all its components. The separator is
    the path's own (``\\`` for Windows paths).
    """
    distinct = sorted({p for p in paths if p})
    split = {p: _parts(p) for p in distinct}
    out: dict[str, str] = {}
    for p, parts in split.items():
        sep = "\\" if "\\" in p and "/" not in p else "/"
        n = 1
        while n < len(parts) and any(q != p and split[q][-n:] == parts[-n:] for q in distinct):
            n += 1
        out[p] = sep.join(parts[-n:]) if parts else p
    return out


def short_ids(ids: Iterable[str], min_len: int = MIN_ID) -> dict[str, str]:
    """Each distinct id shortened to tell it apart from every other id shown.

    A leading word before a long hash (``sidechain-<uuid>``: 46-character ids) is dropped;
    an id of at most ``KEEP_WHOLE`` characters stays whole (``acompact-946d2b``); the rest is cut to
    its shortest prefix (at least ``min_len`` characters) that no other shortened id starts with.
    Ids that would still collide stay whole. ``--json`` has the full ids.
    """
    distinct = sorted(set(ids))

    def bare(i: str) -> str:
        m = _WORD_PREFIX.match(i)
        return i[m.end() :] if m and len(i) - m.end() >= 2 * min_len else i

    bares = {i: bare(i) for i in distinct}
    out: dict[str, str] = {}
    for i in distinct:
        b = bares[i]
        n = len(b) if len(b) <= KEEP_WHOLE else min_len
        while n < len(b) and any(j != i and bares[j].startswith(b[:n]) for j in distinct):
            n += 1
        short = b[:n]
        out[i] = short if not any(j != i and bares[j].startswith(short) for j in distinct) else i
    return out


_MODEL_DATE = re.compile(r"-\d{8}$")


def short_models(models: Iterable[str | None]) -> dict[str, str]:
    """Each distinct model id's short name: without a leading ``claude-`` and a trailing
    ``-YYYYMMDD``, or the whole id where the short name would be another model's too (or empty)."""
    distinct = sorted({m for m in models if m})
    short = {m: _MODEL_DATE.sub("", m.removeprefix("claude-")) for m in distinct}
    seen: dict[str, int] = {}
    for s in short.values():
        seen[s] = seen.get(s, 0) + 1
    return {m: s if s and seen[s] == 1 else m for m, s in short.items()}


def flow(phrases: Sequence[str], width: int, sep: str = "  ") -> list[str]:
    """Phrases packed greedily into lines at most ``width`` cells wide, joined by ``sep``.

    A phrase wider than ``width`` gets a line of its own (the terminal wraps it); phrases are
    never split.
    """
    lines: list[str] = []
    cur = ""
    for ph in phrases:
        if not ph:
            continue
        if cur and cell_len(cur) + cell_len(sep) + cell_len(ph) <= width:
            cur += sep + ph
            continue
        if cur:
            lines.append(cur)
        cur = ph
    if cur:
        lines.append(cur)
    return lines


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, its end cut and marked with an ellipsis."""
    if cell_len(text) <= width:
        return text
    keep = max(0, width - 1)
    while keep and cell_len(text[:keep]) > width - 1:
        keep -= 1
    return text[:keep] + "…"


def cut_start(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, its start cut and marked with an ellipsis (paths: the end names)."""
    if cell_len(text) <= width:
        return text
    keep = max(0, width - 1)
    while keep and cell_len(text[-keep:]) > width - 1:
        keep -= 1
    return "…" + (text[-keep:] if keep else "")


def hang(head: str, text: str, width: int, indent: str | None = None) -> list[str]:
    """``head`` then ``text`` in lines at most ``width`` cells wide, the lines after the first
    indented under the text's start, or by ``indent`` when given (a row of a list whose message is
    long: its first line is the row, the rest hang under it, none wrapped by the terminal). A word
    longer than a line is cut. Pure."""
    indent = " " * cell_len(head) if indent is None else indent
    room = max(10, width - len(indent))
    words = text.split(" ")
    lines: list[str] = []
    cur = ""
    for w in words:
        if cur and cell_len(cur) + 1 + cell_len(w) > room:
            lines.append(cur)
            cur = ""
        cur = f"{cur} {w}" if cur else w
    lines.append(cur)
    return [cut((head if i == 0 else indent) + line, width) for i, line in enumerate(lines)]
