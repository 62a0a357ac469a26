"""Framing: complete lines only, CRLF and blank lines, invariant under chunking."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.framing import Framer, Line, split_lines


def test_torn_tail_waits_and_completes_later() -> None:
    f = Framer()
    assert f.feed(b'{"a":1}\n{"b"') == [Line(0, b'{"a":1}')]
    assert f.offset == 8 and f.pending == 4
    assert f.feed(b":2}\n") == [Line(8, b'{"b":2}')]
    assert f.offset == 16 and f.pending == 0


def test_crlf_and_blank_lines() -> None:
    lines, consumed = split_lines(b'{"a":1}\r\n\r\n  \n{"b":2}\n', 100)
    assert lines == [Line(100, b'{"a":1}'), Line(114, b'{"b":2}')]
    assert consumed == 22


def test_large_line() -> None:
    big = b'{"x":"' + b"y" * (5 << 20) + b'"}'
    f = Framer()
    out = []
    for i in range(0, len(big), 1 << 16):
        out += f.feed(big[i : i + (1 << 16)])
    assert out == []
    assert f.feed(b"\n") == [Line(0, big)]


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    st.booleans(),
    st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_chunk_invariance(parts: list[bytes], crlf: bool, cuts: list[int]) -> None:
    sep = b"\r\n" if crlf else b"\n"
    data = sep.join(parts) + (sep if parts else b"") + b"torn"
    whole, consumed = split_lines(data)
    f = Framer()
    got: list[Line] = []
    prev = 0
    for c in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        got += f.feed(data[prev:c])
        prev = c
    assert got == whole
    assert f.offset == consumed
    assert data[consumed:] == b"torn" or not parts
