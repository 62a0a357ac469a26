"""A transcript put back together from its framed lines (``core.reassemble``): what ``split_lines``
takes apart, ``reassemble`` gives back, with LF or CRLF endings and empty lines (an LF file with a
blank line after every line reads as CRLF: the offsets alone cannot tell them apart)."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from ingestd.core.framing import split_lines
from ingestd.core.reassemble import Piece, reassemble

LINE = st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b and not b.isspace() and not b.endswith(b"\r"))


def pieces_of(data: bytes) -> list[Piece]:
    lines, consumed = split_lines(data)
    assert consumed == len(data)
    return [Piece(ln.offset, ln.data) for ln in lines]


@given(
    st.lists(st.tuples(LINE, st.integers(0, 2)), min_size=2, max_size=20),
    st.sampled_from([b"\n", b"\r\n"]),
    st.integers(0, 2),
)
def test_a_file_of_lines_and_empty_lines_comes_back_byte_for_byte(
    lines: list[tuple[bytes, int]], term: bytes, lead: int
) -> None:
    # an LF file whose every gap is even reads as CRLF (the offsets cannot tell): one line follows another
    assume(term == b"\r\n" or any(blanks == 0 for _, blanks in lines[:-1]))
    lines[-1] = (lines[-1][0], 0)  # blank lines after the last line leave no trace in the log
    data = term * lead + b"".join(line + term + term * blanks for line, blanks in lines)
    got = reassemble(list(reversed(pieces_of(data))))
    assert got.problem is None
    assert got.data == data
    assert got.blank_lines == lead + sum(b for _, b in lines)
    assert got.lines == len(lines)


def test_one_line_gets_claude_codes_line_feed() -> None:
    assert reassemble([Piece(0, b'{"a":1}')]).data == b'{"a":1}\n'


def test_a_file_read_to_the_end_of_its_last_line_gets_no_terminator_after_it() -> None:
    lines = [Piece(0, b'{"a":1}'), Piece(8, b'{"b":2}')]
    assert reassemble(lines, end=15).data == b'{"a":1}\n{"b":2}'
    assert reassemble(lines, end=16).data == b'{"a":1}\n{"b":2}\n'  # read past the line's newline
    assert reassemble(lines, end=None).data == b'{"a":1}\n{"b":2}\n'


def test_no_lines_is_an_empty_file() -> None:
    assert reassemble([]).data == b""


def test_an_oversized_marker_cannot_be_put_back() -> None:
    got = reassemble([Piece(0, b"{}"), Piece(3, b'{"oversized": {}}', whole=False)])
    assert got.data is None
    assert got.problem is not None and "byte 3" in got.problem


def test_overlapping_lines_cannot_be_put_back() -> None:
    got = reassemble([Piece(0, b"abcdef"), Piece(4, b"xy")])
    assert got.data is None
    assert got.problem == "the lines at bytes 0 and 4 overlap"


def test_even_gaps_are_crlf_endings_and_an_odd_one_makes_it_a_line_feed_file() -> None:
    assert reassemble([Piece(0, b"a"), Piece(3, b"b"), Piece(6, b"c")]).data == b"a\r\nb\r\nc\r\n"
    assert reassemble([Piece(0, b"a"), Piece(3, b"b"), Piece(7, b"c")]).data == b"a\n\nb\n\n\nc\n"


def test_leading_bytes_that_are_not_whole_crlf_lines_cannot_be_put_back() -> None:
    got = reassemble([Piece(1, b"a"), Piece(4, b"b")])
    assert got.data is None
    assert got.problem == "the 1 bytes before the first line are not whole blank lines"
