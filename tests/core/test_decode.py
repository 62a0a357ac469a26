"""Lenient decoding: recovered lines keep their usage; non-objects are invalid with a reason."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingestd.core import decode
from ingestd.core.decode import MAX_INT_DIGITS, MAX_LENIENT_DEPTH, decode_line
from ingestd.core.keys import jsonl_key, short_hash, stable_id


def test_invalid_utf8_is_recovered() -> None:
    """A line with invalid UTF-8 is decoded with U+FFFD in its place and marked recovered; its numbers (usage)
    stay intact."""
    d = decode_line(b'{"type":"assistant","t":"caf\xff","u":{"input_tokens":3}}')
    assert d.recovered and d.obj is not None
    assert d.obj["u"]["input_tokens"] == 3
    assert "\ufffd" in d.obj["t"]


def test_lone_surrogate_escape_is_recovered() -> None:
    d = decode_line(b'{"type":"user","t":"x \\udc9d y"}')
    assert d.obj is not None and d.recovered
    d.obj["t"].encode("utf-8")  # projected text is valid UTF-8


def test_rejections_have_reasons() -> None:
    """A line that is not JSON, or JSON that is not an object, is refused with its reason; an object is not."""
    assert decode_line(b"not json {").reason == "not_json"
    assert decode_line(b"[1,2]").reason == "not_object"
    assert decode_line(b'"str"').reason == "not_object"
    assert decode_line(b'{"ok":1}').reason is None


def _nested_with_surrogate(depth: int) -> bytes:
    return b'{"x":"\\ud800","y":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def test_lenient_depth_is_bounded_explicitly_not_by_the_callers_stack() -> None:
    # regression: a recursive repair pass raised RecursionError (a 500 on POST /hooks)
    shallow = decode_line(_nested_with_surrogate(MAX_LENIENT_DEPTH))
    assert shallow.recovered and shallow.obj is not None and shallow.obj["x"] == "\U000f0000"

    def at_depth(n: int) -> object:
        return decode_line(_nested_with_surrogate(MAX_LENIENT_DEPTH + 1)) if n == 0 else at_depth(n - 1)

    assert decode_line(_nested_with_surrogate(MAX_LENIENT_DEPTH + 1)).reason == "too_deep"
    assert at_depth(300) == decode_line(_nested_with_surrogate(MAX_LENIENT_DEPTH + 1))


def test_repaired_keys_stay_distinct() -> None:
    # a lone surrogate U+D800+n becomes U+F0000+n: two damaged keys (or ids) never become one
    d = decode_line(b'{"k\\ud800":1,"k\\ud801":[2,"\\udc00"],"z":{"a":"\\ud83d"}}')
    assert d.recovered and d.obj == {
        "k\U000f0000": 1,
        "k\U000f0001": [2, "\U000f0400"],
        "z": {"a": "\U000f003d"},
    }


def test_a_bom_before_the_object_is_skipped() -> None:
    d = decode_line(b"\xef\xbb\xbf" + b'{"type":"user"}')
    assert d.obj == {"type": "user"} and not d.recovered


@given(st.binary(max_size=200))
def test_never_raises(data: bytes) -> None:
    """Any bytes decode to an object or a reason, exactly one of the two, and never raise."""
    d = decode_line(data)
    assert (d.obj is None) == (d.reason is not None)


def test_keys_are_ordered_and_stable() -> None:
    oh = short_hash(b"proj/s.jsonl")
    a = jsonl_key(oh, 0, 10, b"x")
    b = jsonl_key(oh, 0, 200, b"x")
    assert a < b and a != jsonl_key(oh, 0, 10, b"y") and a != jsonl_key(oh, 1, 10, b"x")
    assert stable_id("m", "input") == stable_id("m", "input")
    assert 0 <= stable_id("m", "output") < 2**63


def test_too_deep_and_too_large_say_so_instead_of_not_json() -> None:
    # Regression: both read `not_json`, which they are not
    deep = b'{"a":' + b"[" * 1100 + b"]" * 1100 + b"}"
    assert decode_line(deep).reason == "too_deep"
    assert decode_line(b'{"a":' + b"1" * (MAX_INT_DIGITS + 1) + b"}").reason == "number_too_large"
    assert decode_line(b'{"a":-' + b"9" * (MAX_INT_DIGITS + 1) + b"}").reason == "number_too_large"
    # the limit is the module's, whatever PYTHONINTMAXSTRDIGITS says: at it, the line decodes
    at_limit = decode_line(b'{"a":-' + b"9" * MAX_INT_DIGITS + b',"s":"\\udc9d"}')
    assert at_limit.obj is not None and len(str(at_limit.obj["a"])) == MAX_INT_DIGITS + 1
    assert decode_line(b'{"a":' + b"[" * 600 + b"]" * 600 + b"}").obj is not None  # under orjson's 1024


def test_a_line_past_orjsons_depth_limit_is_not_decoded_leniently(monkeypatch: pytest.MonkeyPatch) -> None:
    # the lenient pass could only end in too_deep, after decoding the whole line (60 MB: 419 ms)
    calls: list[str] = []

    def loads(text: str, **kw: Any) -> Any:
        calls.append(text[:10])
        return real(text, **kw)

    real = json.loads
    monkeypatch.setattr(decode.json, "loads", loads)
    assert decode_line(b'{"a":' + b"[" * 1100 + b"]" * 1100 + b"}").reason == "too_deep"
    assert decode_line(b"[" * 1100 + b"]" * 1100).reason == "too_deep"
    assert calls == []
    # a number too large still goes to the lenient pass, which says so
    assert decode_line(b'{"a":' + b"1" * (MAX_INT_DIGITS + 1) + b"}").reason == "number_too_large"
    assert len(calls) == 1


def test_too_deep_does_not_depend_on_the_recursion_limit() -> None:
    # the lenient pass under a raised recursion limit (or Python 3.12+'s C limit) took a top-level
    # array past orjson's 1024 levels apart and called it not_object, and a huge number after the
    # deep part number_too_large: orjson's limit decides alike everywhere
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        assert decode_line(b"[" * 1100 + b"]" * 1100).reason == "too_deep"
        tail = b',"n":' + b"1" * (MAX_INT_DIGITS + 1) + b"}"
        assert decode_line(b'{"a":' + b"[" * 1100 + b"]" * 1100 + tail).reason == "too_deep"
    finally:
        sys.setrecursionlimit(old)
