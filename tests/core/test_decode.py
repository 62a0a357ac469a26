"""Lenient decoding: recovered lines keep their usage; non-objects are invalid with a reason."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.decode import decode_line
from ingestd.core.keys import jsonl_key, short_hash, stable_id


def test_invalid_utf8_is_recovered() -> None:
    d = decode_line(b'{"type":"assistant","t":"caf\xff","u":{"input_tokens":3}}')
    assert d.recovered and d.obj is not None
    assert d.obj["u"]["input_tokens"] == 3
    assert "\ufffd" in d.obj["t"]


def test_lone_surrogate_escape_is_recovered() -> None:
    d = decode_line(b'{"type":"user","t":"x \\udc9d y"}')
    assert d.obj is not None and d.recovered
    d.obj["t"].encode("utf-8")  # projected text is valid UTF-8


def test_rejections_have_reasons() -> None:
    assert decode_line(b"not json {").reason == "not_json"
    assert decode_line(b"[1,2]").reason == "not_object"
    assert decode_line(b'"str"').reason == "not_object"
    assert decode_line(b'{"ok":1}').reason is None


@given(st.binary(max_size=200))
def test_never_raises(data: bytes) -> None:
    d = decode_line(data)
    assert (d.obj is None) == (d.reason is not None)


def test_keys_are_ordered_and_stable() -> None:
    oh = short_hash(b"proj/s.jsonl")
    a = jsonl_key(oh, 0, 10, b"x")
    b = jsonl_key(oh, 0, 200, b"x")
    assert a < b and a != jsonl_key(oh, 0, 10, b"y") and a != jsonl_key(oh, 1, 10, b"x")
    assert stable_id("m", "input") == stable_id("m", "input")
    assert 0 <= stable_id("m", "output") < 2**63
