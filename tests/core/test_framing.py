"""Framing: complete lines only, CRLF and blank lines, invariant under chunking."""

from __future__ import annotations

from hashlib import blake2b

from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.framing import HEAD_BYTES, Framer, Line, Oversized, split_lines


def test_torn_tail_waits_and_completes_later() -> None:
    f = Framer()
    assert f.feed(b'{"a":1}\n{"b"') == [Line(0, b'{"a":1}')]
    assert f.offset == 8 and f.pending == 4
    assert f.feed(b":2}\n") == [Line(8, b'{"b":2}')]
    assert f.offset == 16 and f.pending == 0


def test_crlf_and_blank_lines() -> None:
    """CRLF ends a line like LF, blank and white-space-only lines yield nothing, and offsets count every byte."""
    lines, consumed = split_lines(b'{"a":1}\r\n\r\n  \n{"b":2}\n', 100)
    assert lines == [Line(100, b'{"a":1}'), Line(114, b'{"b":2}')]
    assert consumed == 22


def test_large_line() -> None:
    """A 5 MiB line fed in 64 KiB chunks yields nothing until its newline, then itself whole at its offset."""
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
    """However the bytes are cut into chunks, the framer yields the lines a whole-buffer split does, and keeps
    the torn tail."""
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


def _wide_line() -> bytes:
    # 1.5M `{}` (3 MB): under any byte cap, but decoding it takes ~140 MB (a 60 MB line of them took 1.87 GB)
    return b'{"type":"user","toolUseResult":[' + b",".join([b"{}"] * 1_500_000) + b'],"uuid":"u1"}'


def test_a_line_too_wide_to_decode_is_oversized_whatever_the_chunking() -> None:
    wide = _wide_line()
    data = b'{"a":1}\n' + wide + b"\r\n" + b'{"b":2}\n'
    outs = []
    for size in (len(data), 1 << 16, 1000003):
        f = Framer()
        out = []
        for i in range(0, len(data), size):
            out += f.feed(data[i : i + size])
        outs.append(out)
        assert f.offset == len(data)
    assert outs[0] == outs[1] == outs[2]
    first, ov, last = outs[0]
    assert first == Line(0, b'{"a":1}') and last == Line(8 + len(wide) + 2, b'{"b":2}')
    assert isinstance(ov, Oversized) and ov.reason == "values" and ov.offset == 8
    assert ov.length == len(wide) + 1  # the "\r" counted, as for a line past the cap
    assert ov.digest == blake2b(wide + b"\r", digest_size=8).hexdigest()
    assert ov.head == wide[:HEAD_BYTES]


def test_as_long_a_line_of_text_is_a_line() -> None:
    text = b'{"x":"' + b"y" * len(_wide_line()) + b'"}'
    assert Framer().feed(text + b"\n") == [Line(0, text)]
