"""A transcript's bytes put back together from its logged lines (``ingestd export``). Pure.

The log keeps each complete line of a transcript without its terminator, at its byte offset
(``core.framing``: ``\\n`` or ``\\r\\n`` endings, blank lines skipped, a torn tail held back). The
offsets give back everything else: between two lines there are exactly their terminator and any
blank lines, so the gap's length says which. The file's terminator is ``\\r\\n`` when every gap
is even and at least one line follows another (a Windows-written file), else ``\\n`` (what Claude
Code writes); a gap longer than one terminator held blank lines, written back as empty lines
(their whitespace, if any, was never logged: ``blank_lines`` counts them). The last line gets
the file's terminator, unless the file was read to exactly its end (``end``: the last line was
read without one, once its file stayed idle); blank lines and a torn tail after it were never
logged, so they are not there.

What cannot be put back is a value, not an exception (``Rebuilt.problem``): lines that overlap
(the log holds two versions of the same bytes), a gap no terminator fits, and a line logged as an
``oversized`` marker (only its head, tail and digest are kept: ``core.oversized``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

LF = b"\n"
CRLF = b"\r\n"


@dataclass(frozen=True, slots=True)
class Piece:
    """One logged line of a transcript.

    Attributes:
        offset: int, byte offset of the line's first byte in the file.
        data: bytes, the line without its terminator.
        whole: bool, False for an ``oversized`` marker (``data`` is the marker, not the line).
    """

    offset: int
    data: bytes
    whole: bool = True


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """A transcript's bytes, or why they cannot be put back.

    Attributes:
        data: bytes | None, the file's bytes (None when ``problem`` is set).
        problem: str | None, why the file cannot be written byte for byte, naming the offset.
        blank_lines: int, blank lines restored as empty lines between logged lines.
        lines: int, logged lines in the file.
    """

    data: bytes | None
    problem: str | None = None
    blank_lines: int = 0
    lines: int = 0


def reassemble(pieces: Sequence[Piece], end: int | None = None) -> Rebuilt:
    """The file whose complete lines are ``pieces`` (any order; offsets distinct). ``end``: the byte
    offset the file was read to (its checkpoint), when known: a last line ending exactly there had
    no terminator and gets none. Pure."""
    ordered = sorted(pieces, key=lambda p: p.offset)
    for p in ordered:
        if not p.whole:
            return Rebuilt(None, f"the line at byte {p.offset} was longer than the log keeps (an oversized marker)")
    gaps: list[int] = []
    for a, b in pairwise(ordered):
        gap = b.offset - (a.offset + len(a.data))
        if gap < 1:
            return Rebuilt(None, f"the lines at bytes {a.offset} and {b.offset} overlap")
        gaps.append(gap)
    term = CRLF if gaps and all(g % 2 == 0 for g in gaps) else LF
    lead = ordered[0].offset if ordered else 0
    if lead % len(term):
        return Rebuilt(None, f"the {lead} bytes before the first line are not whole blank lines")
    out = bytearray(term * (lead // len(term)))
    blank = lead // len(term)
    for i, p in enumerate(ordered):
        out += p.data
        n = gaps[i] // len(term) if i < len(gaps) else int(end != p.offset + len(p.data))
        if i < len(gaps) and gaps[i] % len(term):
            return Rebuilt(None, f"the {gaps[i]} bytes after the line at byte {p.offset} are not line endings")
        out += term * n
        blank += n - 1
    return Rebuilt(bytes(out), None, blank, len(ordered))
