"""Framing bytes into complete lines (SPEC §7), pure.

A line is complete only when its ``\\n`` has been read: a torn tail is held back and
re-read later from the committed offset. ``\\r\\n`` endings are tolerated (a
Windows-written transcript, e.g. ``corpus/claude-projects/C--Users-user-Project``
was produced on Windows), and blank lines are skipped without a row. The output is
a function of the byte stream only, never of how it was chunked (property-tested).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Line:
    """One complete line.

    Attributes:
        offset: int, byte offset of the line's first byte in its file.
        data: bytes, the line without its ``\\n`` / ``\\r\\n`` terminator.
    """

    offset: int
    data: bytes


def split_lines(buf: bytes, base_offset: int = 0) -> tuple[list[Line], int]:
    """Split ``buf`` (file bytes starting at ``base_offset``) into complete lines.

    Args:
        buf: bytes read from a file, starting at ``base_offset``.
        base_offset: int, file offset of ``buf[0]``.

    Returns:
        ``(lines, consumed)``: the complete non-blank lines, and how many bytes of
        ``buf`` they (and any blank lines) span. ``buf[consumed:]`` is the torn tail.
    """
    lines: list[Line] = []
    append = lines.append
    find = buf.find
    start = 0
    while True:
        nl = find(b"\n", start)
        if nl < 0:
            break
        end = nl - 1 if nl > start and buf[nl - 1] == 13 else nl
        if end > start and not buf[start:end].isspace():
            append(Line(base_offset + start, buf[start:end]))
        start = nl + 1
    return lines, start


class Framer:
    """Incremental framer: feed chunks, get complete lines (chunk-invariant).

    Holds at most one torn tail in memory. ``offset`` is the file offset just past
    the last complete line, i.e. what may be committed as the checkpoint.
    """

    __slots__ = ("_pending", "offset")

    def __init__(self, offset: int = 0) -> None:
        self.offset = offset
        self._pending = b""

    def feed(self, chunk: bytes) -> list[Line]:
        """Add ``chunk`` (the bytes following everything fed so far); return the lines it completes."""
        buf = self._pending + chunk if self._pending else chunk
        lines, consumed = split_lines(buf, self.offset)
        self.offset += consumed
        self._pending = buf[consumed:]
        return lines

    @property
    def pending(self) -> int:
        """int, bytes of torn tail held back."""
        return len(self._pending)
