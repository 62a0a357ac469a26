"""Fitting a report table to the terminal's width without losing what the table is for.

Each column says how it may give way. Key columns (model ids, session prefixes, tokens, cost) are
never dropped or cut: as a last resort they wrap. An elidable column (a project path) shrinks to
the room left, down to its minimum, through its own shortening function. Then, in the table's
order of importance, columns switch to a narrower form (a date over its time) or are dropped, and
the table says which ones it hid. At 110 columns and more nothing gives way. When even the key
columns cannot share one line, each row is printed as a block instead (``stacked``): its first
cell as a heading, then every other cell as ``head value`` pairs packed into lines, so nothing is
dropped or cut at 40 columns either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from rich import box
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

Cell = str | Text
# Between two columns (collapsed padding, no edges): the cost of one more column.
GAP = 2
# box.SIMPLE_HEAD with a rule above the footer instead of an empty line (no empty rows).
RULES = box.Box("    \n    \n ── \n    \n    \n ── \n    \n    \n")


@dataclass(frozen=True, slots=True)
class Col:
    """One column and how it gives way.

    Attributes:
        head: str, the header (also the name used in ``steps`` and in the hidden-columns note).
        cells: list[Cell], one per row.
        justify: str, ``left`` or ``right``.
        footer: Cell, the footer cell ('' for none).
        key: bool, never dropped and never cut (wraps when nothing else is left to give).
        elide: (text, width) -> text, or None: shortens this column's cells to a width.
        min_width: int, cells, the narrowest an elidable column gets before other steps run.
        compact: list[Cell] | None, a narrower form of ``cells`` (may be several lines).
        compact_head: str | None, the header to show with ``compact`` (may be several lines).
    """

    head: str
    cells: list[Cell]
    justify: str = "left"
    footer: Cell = ""
    key: bool = False
    elide: Callable[[str, int], str] | None = None
    min_width: int = 0
    compact: list[Cell] | None = None
    compact_head: str | None = None

    @property
    def title(self) -> str:
        """The header as shown (``head`` names the column in ``steps``)."""
        return self.shown_head or self.head

    shown_head: str | None = None


def _width(cell: Cell) -> int:
    text = cell.plain if isinstance(cell, Text) else cell
    return max((cell_len(line) for line in text.split("\n")), default=0)


def natural(col: Col) -> int:
    """The width the column needs to show every cell whole (cells)."""
    return max([_width(col.title), _width(col.footer), *(_width(c) for c in col.cells)])


def _floor(col: Col) -> int:
    return min(natural(col), col.min_width) if col.elide is not None else natural(col)


def _need(cols: Sequence[Col]) -> int:
    return sum(_floor(c) for c in cols) + GAP * (len(cols) - 1)


def fit(width: int, cols: list[Col], steps: Sequence[str]) -> tuple[list[Col], list[str]]:
    """The columns that fit ``width`` and the heads of the ones hidden.

    Args:
        width: int, cells available.
        cols: the full table, left to right.
        steps: heads, least important first: a column with a ``compact`` form takes it the first
            time it is named, and is dropped the next time (or the first, without one). A key
            column is never dropped: naming it only gives it its compact form, if it has one.
    """
    cols = list(cols)
    hidden: list[str] = []
    for head in steps:
        if _need(cols) <= width:
            break
        i = next((i for i, c in enumerate(cols) if c.head == head and (not c.key or c.compact)), None)
        if i is None:
            continue
        c = cols[i]
        if c.compact is not None:
            cols[i] = replace(c, cells=c.compact, compact=None, shown_head=c.compact_head)
        else:
            hidden.append(cols.pop(i).head)
    return cols, hidden


def fits(width: int, cols: Sequence[Col]) -> bool:
    """Whether ``cols`` fit ``width`` on one line per row without cutting a key column."""
    return _need(cols) <= width


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _pair(head: str, cell: Cell) -> Text:
    t = Text(head.replace("\n", " ") + " ", style="dim")
    t.append_text(cell if isinstance(cell, Text) else Text(cell))
    return t


def _block(width: int, heading: Cell, pairs: list[Text]) -> list[Text]:
    out = [Text(_plain(heading), style="bold") if isinstance(heading, str) else heading]
    line: Text | None = None
    for p in pairs:
        if line is not None and cell_len(line.plain) + GAP + cell_len(p.plain) <= width - 2:
            line.append(" " * GAP)
            line.append_text(p)
            continue
        if line is not None:
            out.append(line)
        line = Text("  ")
        line.append_text(p)
    if line is not None:
        out.append(line)
    return out


def stacked(width: int, cols: Sequence[Col]) -> list[Text]:
    """Every row as a block: the first column's cell as a heading, then ``head value`` pairs of the
    other columns (empty cells left out) packed into lines of ``width``; the footers as a last block.
    Nothing is dropped or cut (a single pair wider than ``width`` wraps)."""
    if not cols:
        return []
    first, rest = cols[0], cols[1:]
    lines: list[Text] = []
    for r in range(len(first.cells)):
        pairs = [_pair(c.head, c.cells[r]) for c in rest if _plain(c.cells[r]).strip()]
        lines += _block(width, first.cells[r], pairs)
    if any(_plain(c.footer) for c in cols):
        pairs = [_pair(c.head, c.footer) for c in rest if _plain(c.footer).strip()]
        lines += _block(width, first.footer or "total", pairs)
    return lines


def _elide_widths(cols: Sequence[Col], room: int) -> dict[str, int]:
    """Column widths: natural for fixed columns; the ``room`` left shared among elidable ones, each
    from its floor up to its natural width, the narrowest needs served first (water-filling)."""
    widths = {c.head: natural(c) for c in cols if c.elide is None}
    elidable = sorted((c for c in cols if c.elide is not None), key=natural)
    left = room - sum(_floor(c) for c in elidable)
    for i, c in enumerate(elidable):
        share = max(0, left) // (len(elidable) - i)
        w = min(natural(c), _floor(c) + share)
        left -= w - _floor(c)
        widths[c.head] = w
    return widths


def build(width: int, cols: list[Col], steps: Sequence[str]) -> tuple[Table, list[str]]:
    """A rich table of ``cols`` fitted to ``width`` (see ``fit``) and the hidden heads."""
    kept, hidden = fit(width, cols, steps)
    if kept and cols and kept[0] is not cols[0] and not kept[0].footer and cols[0].head in hidden:
        kept[0] = replace(kept[0], footer=cols[0].footer)  # the footer's label ("total") stays
    fixed = sum(natural(c) for c in kept if c.elide is None) + GAP * (len(kept) - 1)
    squeezed = fixed > width
    table = Table(
        box=RULES,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
        show_footer=any(c.footer for c in kept),
    )
    widths = _elide_widths(kept, width - fixed)
    for c in kept:
        w = widths[c.head]
        wraps = squeezed and c.key
        table.add_column(
            c.title,
            justify=c.justify,  # type: ignore[arg-type]
            footer=c.footer,
            no_wrap=not wraps,
            overflow="fold" if wraps else "ellipsis",
            min_width=None if wraps else w,
            max_width=None if wraps else w,
        )
    for r in range(len(kept[0].cells) if kept else 0):
        row: list[Cell] = []
        for c in kept:
            cell = c.cells[r]
            w = widths[c.head]
            if c.elide is not None and cell_len(cell.plain if isinstance(cell, Text) else cell) > w:
                cell = c.elide(cell, w) if isinstance(cell, str) else Text(c.elide(cell.plain, w), style=cell.style)
            row.append(cell)
        table.add_row(*row)
    return table, hidden


def hidden_note(hidden: list[str], width: int) -> Text | None:
    """``(hidden to fit N columns: a, b; widen the terminal or use --json)``, or None."""
    if not hidden:
        return None
    return Text(f"(hidden to fit {width} columns: {', '.join(hidden)}; widen the terminal or use --json)", style="dim")
