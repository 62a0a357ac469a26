"""Framing bytes into complete lines (SPEC §7), pure.

A line is complete only when its ``\\n`` has been read: a torn tail is held back and
re-read later from the committed offset. ``\\r\\n`` endings are tolerated (a
Windows-written transcript, e.g. ``corpus/claude-projects/C--Users-user-Project``
was produced on Windows), and blank lines are skipped without a row. The output is
a function of the byte stream only, never of how it was chunked (property-tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from hashlib import blake2b

from ingestd.core.decode import MAX_LINE_DECODED_BYTES, VALUE_BYTES, too_wide


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


# SPEC §12: a longer line is logged as an oversized marker (``Oversized``), never held whole; so is a
# line under the cap whose decoding could take more memory than SPEC §11 allows (``too_wide``).
MAX_LINE_BYTES = 64 << 20
HEAD_BYTES = 4 << 10
_WIDE_MIN_BYTES = MAX_LINE_DECODED_BYTES // VALUE_BYTES  # shorter lines cannot reach the budget
TAIL_BYTES = 64 << 10


@dataclass(frozen=True, slots=True)
class Oversized:
    """A complete line longer than the framer's ``max_line_bytes``: what is kept of it.

    Attributes:
        offset: int, byte offset of the line's first byte.
        length: int, bytes of the line up to its ``\\n`` (a ``\\r`` before it included).
        digest: str, blake2b-8 hex of those bytes (the same hash a normal line's key uses).
        head: bytes, the first ``HEAD_BYTES`` of the line.
        tail: bytes, the last ``TAIL_BYTES`` of the line (overlapping ``head`` on a short line).
        reason: str, ``length`` (past ``max_line_bytes``) or ``values`` (under it, but decoding it
            could take more than ``MAX_LINE_DECODED_BYTES``: ``ingestd.core.decode.too_wide``).
    """

    offset: int
    length: int
    digest: str
    head: bytes
    tail: bytes
    reason: str = "length"


class _Long:
    """A line being read past the cap: length, running hash, head and tail; nothing else kept."""

    __slots__ = ("blank", "hasher", "head", "length", "tail")

    def __init__(self) -> None:
        self.blank = True  # whitespace only so far (a blank line is skipped, however long)
        self.length = 0
        self.hasher = blake2b(digest_size=8)
        self.head = b""
        self.tail = bytearray()

    def add(self, data: bytes | memoryview) -> None:
        if self.blank and len(data):
            self.blank = bytes(data[:4096]).isspace() and bytes(data).isspace()
        self.hasher.update(data)
        if len(self.head) < HEAD_BYTES:
            self.head += bytes(data[: HEAD_BYTES - len(self.head)])
        self.length += len(data)
        tail = self.tail
        if len(data) >= TAIL_BYTES:
            tail[:] = data[-TAIL_BYTES:]
        else:
            tail += data
            if len(tail) > 2 * TAIL_BYTES:  # amortised: each byte is moved at most once more
                del tail[: len(tail) - TAIL_BYTES]

    def done(self, offset: int, reason: str = "length") -> Oversized:
        tail = bytes(self.tail[-TAIL_BYTES:])
        return Oversized(offset, self.length, self.hasher.hexdigest(), self.head, tail, reason)


class Framer:
    """Incremental framer: feed chunks, get complete lines (chunk-invariant), in one pass.

    Linear in the bytes fed however they are chunked: a torn tail is kept as a list of
    chunks and joined once, when its newline arrives (``copied`` counts the bytes joined, so
    a test can check the work per byte). A line longer than ``max_line_bytes`` is never held:
    past the cap only its length, hash, head and tail are kept (``Oversized``), so a file of
    zeros with no newline costs one pass and constant memory. ``offset`` is the file offset
    just past the last complete line (what may be committed as the checkpoint); ``read`` is
    the offset just past the bytes fed (a tailer resumes feeding there).

    Args:
        offset: int, file offset of the first byte fed.
        max_line_bytes: int, longest line kept whole (default ``MAX_LINE_BYTES``).
    """

    __slots__ = ("_long", "_parts", "_pending", "copied", "max_line_bytes", "offset", "read")

    def __init__(self, offset: int = 0, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.offset = offset
        self.read = offset
        self.max_line_bytes = max_line_bytes
        self.copied = 0
        self._parts: list[bytes] = []
        self._pending = 0
        self._long: _Long | None = None

    def _line(self, out: list[Line | Oversized], data: bytes) -> None:
        """Emit one complete line given whole (terminator excluded, ``\\r`` still on)."""
        end = len(data) - 1 if data.endswith(b"\r") else len(data)
        if end > self.max_line_bytes:
            lg = _Long()
            lg.add(data)
            if not lg.blank:
                out.append(lg.done(self.offset))
        elif end > 0 and not data[:end].isspace():
            if too_wide(data, MAX_LINE_DECODED_BYTES):
                lg = _Long()
                lg.add(data)
                out.append(lg.done(self.offset, "values"))
            else:
                out.append(Line(self.offset, data[:end]))
        self.offset += len(data) + 1

    def feed(self, chunk: bytes) -> list[Line | Oversized]:
        """Add ``chunk`` (the bytes following everything fed so far); return the lines it completes."""
        out: list[Line | Oversized] = []
        self.read += len(chunk)
        pos = 0
        if self._long is not None or self._parts:
            nl = chunk.find(b"\n")
            if nl < 0:
                self._hold(chunk)
                return out
            if self._long is not None:
                self._long.add(memoryview(chunk)[:nl])
                if not self._long.blank:
                    out.append(self._long.done(self.offset))
                self.offset += self._long.length + 1
                self._long = None
            else:
                head = chunk[:nl]
                data = b"".join((*self._parts, head))
                self.copied += len(data)
                self._parts, self._pending = [], 0
                self._line(out, data)
            pos = nl + 1
        lines, consumed = split_lines(chunk[pos:] if pos else chunk, self.offset)
        cap = self.max_line_bytes
        for ln in lines:
            n = len(ln.data)
            # (no call per line: only a line long enough to reach the budget is counted)
            if n > cap or (n > _WIDE_MIN_BYTES and too_wide(ln.data, MAX_LINE_DECODED_BYTES)):
                # rare: re-take the line's bytes whole (terminator excluded) to keep its hash exact
                rel = ln.offset - self.offset + pos
                nl_at = chunk.find(b"\n", rel)
                lg = _Long()
                lg.add(memoryview(chunk)[rel:nl_at])
                out.append(lg.done(ln.offset, "length" if n > cap else "values"))
            else:
                out.append(ln)
        self.offset += consumed
        rest = (len(chunk) - pos) - consumed
        if rest:
            self._hold(chunk[len(chunk) - rest :])
        return out

    def _hold(self, data: bytes) -> None:
        """Keep a torn tail: as chunks while under the cap, as an ``Oversized`` in progress past it."""
        if self._long is not None:
            self._long.add(data)
            return
        self._parts.append(data)
        self._pending += len(data)
        if self._pending > self.max_line_bytes + 1:  # + 1: a "\r" before the "\n" is no part of the line
            lg = _Long()
            for p in self._parts:
                lg.add(p)
            self._long = lg
            self._parts, self._pending = [], 0

    def tail(self) -> bytes | None:
        """The torn tail held back, whole; None when there is none or it is past the cap (only its
        length, hash, head and tail are kept)."""
        if self._long is not None or not self._parts:
            return None
        return b"".join(self._parts)

    def end_line(self) -> Line | None:
        """Take the torn tail as the file's last line, as if its ``\\n`` had been read: the caller
        has decided the file will not grow (idle past a grace). The line, or None when the tail is
        blank; either way ``offset`` moves to ``read``. Nothing is done when there is no tail or it
        is past the cap."""
        data = self.tail()
        if data is None:
            return None
        self._parts, self._pending = [], 0
        start, self.offset = self.offset, self.read
        end = len(data) - 1 if data.endswith(b"\r") else len(data)
        if end == 0 or data[:end].isspace():
            return None
        return Line(start, data[:end])

    @property
    def pending(self) -> int:
        """int, bytes of torn tail held back (counted, not held, past the cap)."""
        return self._long.length if self._long is not None else self._pending
