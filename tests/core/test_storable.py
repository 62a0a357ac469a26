"""The one text rule both stores follow (``ingestd.core.storable``): what it changes and what it keeps."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ingestd.core import derive
from ingestd.core.rows import SessionRow, ToolCallRow
from ingestd.core.storable import MAX_TEXT_BYTES, NUL_SYMBOL, storable

# any code point, lone surrogates and U+0000 included
ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=40) | st.text(max_size=3000)


def _storable_everywhere(s: str) -> bool:
    if "\x00" in s or len(s.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@given(ANY_TEXT)
def test_the_form_is_storable_idempotent_and_keeps_storable_text(s: str) -> None:
    out = storable(s)
    assert _storable_everywhere(out)
    assert storable(out) == out
    if _storable_everywhere(s):
        assert out is s


def test_each_rule() -> None:
    """``storable``'s character rules: NUL to U+2400, a lone surrogate to the decoder's private-use code
    point; text within the limit, or with no limit, otherwise unchanged."""
    assert storable("a\x00b") == f"a{NUL_SYMBOL}b"
    assert storable("x\ud800y\udfff") == "x\U000f0000y\U000f07ff"  # the decoder's map (decode.PUA_BASE)
    assert storable("é" * 100) == "é" * 100
    assert storable("/a/b", limit=None) == "/a/b"
    assert storable("a\x00" * 1000, limit=None) == f"a{NUL_SYMBOL}" * 1000


def test_an_over_long_value_keeps_its_ends_and_a_hash_of_the_whole() -> None:
    head, tail = "H" * 400, "T" * 300
    one, two = storable(head + "x" * 5000 + tail), storable(head + "y" * 5000 + tail)
    assert one != two
    for out in (one, two):
        assert len(out.encode()) <= MAX_TEXT_BYTES
        assert out.startswith("H" * 300) and out.endswith("T" * 100)
        assert "…[5700 bytes blake2b " in out
    wide = storable("€" * 2000)  # 3 bytes each: cut at whole characters
    assert len(wide.encode()) <= MAX_TEXT_BYTES and wide.startswith("€" * 100)


def test_rows_are_made_storable_field_by_field() -> None:
    plain = ToolCallRow("s", "t", None, "Bash", None, None, "running")
    bad = ToolCallRow("s\x00", "t", None, "B" * 600, None, None, "running")
    ch = derive.Changes(tool_calls=[plain, bad])
    derive.storable_changes(ch)
    assert ch.tool_calls[0] is plain
    assert ch.tool_calls[1].session_id == "s␀" and len(ch.tool_calls[1].tool_name or "") <= MAX_TEXT_BYTES
    assert isinstance(ch.tool_calls[1], ToolCallRow)
    s = SessionRow("id", None, "/p\x00", *([None] * 3), "working", *([None] * 6))
    ch = derive.Changes(sessions=[s])
    assert derive.storable_changes(ch).sessions[0].project_path == "/p␀"
