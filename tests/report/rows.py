"""Rendered report tables read back as rows of named cells, whatever the width: a table (one line
per row under a header of one or two lines) or, at narrow widths, one block per row (the row's key,
then indented ``label value`` pairs). The width tests assert each value in its own row and column."""

from __future__ import annotations

import re

# header words (tables) and block labels that name the same column
_NAMES = {
    "cache read": "cache_read",
    "c.read": "cache_read",
    "cache wr 5m": "cache_write_5m",
    "c.wr 5m": "cache_write_5m",
    "cache wr 1h": "cache_write_1h",
    "c.wr 1h": "cache_write_1h",
    "last active": "last activity",
}
_BLOCK_LABELS = sorted(
    [
        "last activity",
        "c.wr 5m",
        "c.wr 1h",
        "c.read",
        "input",
        "output",
        "tokens",
        "msgs",
        "cost",
        "session",
        "title",
        "started",
        "status",
        "agents",
    ],
    key=len,
    reverse=True,
)
_CELL = re.compile(r"\S+(?: \S+)*")
_RULE = re.compile(r"^─+$")


def _name(label: str) -> str:
    return _NAMES.get(label, label)


def table_rows(text: str, key: str) -> list[dict[str, str]]:
    """Every body row (and the total row) of a rendered table, as {column: cell}; ``key`` names
    the first column (``model``, ``project``...), which a block's first line holds."""
    lines = [line.rstrip() for line in text.splitlines()]
    rules = [i for i, line in enumerate(lines) if _RULE.match(line)]
    return _table(lines, rules, key) if rules else _blocks(lines, key)


def _spans(line: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group(0)) for m in _CELL.finditer(line)]


def _table(lines: list[str], rules: list[int], key: str) -> list[dict[str, str]]:
    first = rules[0]
    head = _spans(lines[first - 1])
    above = _spans(lines[first - 2]) if first >= 2 and lines[first - 2].startswith(" ") else []
    columns = [] if head[0][0] == 0 else [(0, head[0][0] - 1, key)]  # a key column without a header
    for s, e, word in head:
        top = [w for ts, te, w in above if ts < e and s < te]
        columns.append((s, e, _name(" ".join([*top, word]))))
    # the body between the rules, then the total row under the second rule
    body = lines[first + 1 : rules[1]] + lines[rules[1] + 1 : rules[1] + 2] if len(rules) > 1 else lines[first + 1 :]
    out = []
    for line in body:
        if not line.strip() or (len(rules) == 1 and line.startswith(("(", "+?"))):
            break
        row: dict[str, str] = {}
        for s, e, cell in _spans(line):
            col = max(columns, key=lambda c: (min(e, c[1]) - max(s, c[0]), -abs(s - c[0])))
            assert col[2] not in row, f"two cells under {col[2]!r} in {line!r}"
            row[col[2]] = cell
        out.append(row)
    return out


def _blocks(lines: list[str], key: str) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for i, line in enumerate(lines):
        opens_block = bool(line) and not line.startswith(" ") and i + 1 < len(lines) and lines[i + 1].startswith("  ")
        if opens_block:
            out.append({key: line.strip()})
            continue
        if line.startswith(("(", "+?")) and out:
            break  # the notes under the rows
        if line and not line.startswith(" "):
            continue  # the title
        if not out or not line.strip():
            continue
        for piece in re.split(r"\s{2,}", line.strip()):
            label = next((lb for lb in _BLOCK_LABELS if piece == lb or piece.startswith(lb + " ")), piece.split()[0])
            out[-1][_name(label)] = piece[len(label) :].strip()
    return out
