"""A file's rows found by ranges of their keys (``keys.origin_key_ranges``, migration 0017), pure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.keys import (
    jsonl_key,
    jsonl_key_of_digest,
    line_key_prefix,
    origin_hash,
    origin_key_ranges,
    reset_key,
)


def _in(key: str, ranges: tuple[tuple[str, str], ...]) -> bool:
    return any(low <= key < high for low, high in ranges)


def _keys(origin: str, gen: int, offset: int, line: bytes) -> list[str]:
    oh = origin_hash(origin)
    own = [jsonl_key(oh, gen, offset, line), jsonl_key_of_digest(oh, gen, offset, "0" * 16), reset_key(oh, gen)]
    return [*own, *(f"q:{k}" for k in own)]  # and the quarantine markers of each


origins = st.sampled_from(["p/a.jsonl", "p/b.jsonl", "p/a.jsonl.bak", "p/\udcff.jsonl", "hook"])
gens = st.sampled_from([0, 1, 2, 10, 11, 100])


@given(origins, gens, st.integers(0, 2**40), st.binary(max_size=40), origins, gens)
def test_the_ranges_hold_every_key_of_the_origin_and_generation_and_no_other(
    origin: str, gen: int, offset: int, line: bytes, other: str, other_gen: int
) -> None:
    for key in _keys(origin, gen, offset, line):
        assert _in(key, origin_key_ranges(origin_hash(origin), gen)), key
        assert _in(key, origin_key_ranges(origin_hash(origin))), key
        if other != origin:
            assert not _in(key, origin_key_ranges(origin_hash(other))), (key, other)
        if other_gen != gen:
            assert not _in(key, origin_key_ranges(origin_hash(origin), other_gen)), (key, other_gen)


def test_hook_and_watchdog_keys_fall_in_no_file_range() -> None:
    for key in ("h:k:0123456789abcdef", "i:w:2026-01-01T00:00:00.000Z:60", "q:h:t:0123"):
        assert not _in(key, origin_key_ranges(origin_hash("p/a.jsonl")))


@given(origins, gens, st.integers(0, 2**40), st.binary(max_size=40))
def test_a_line_key_prefix_is_its_file_and_generation(origin: str, gen: int, offset: int, line: bytes) -> None:
    oh = origin_hash(origin)
    want = f"j:{oh}:{gen}:"
    assert line_key_prefix(jsonl_key(oh, gen, offset, line)) == want
    assert line_key_prefix(jsonl_key_of_digest(oh, gen, offset, "0" * 16)) == want
    # the prefix bounds the generation's own range, and no other generation shares it
    assert want == origin_key_ranges(oh, gen)[0][0]
    assert line_key_prefix(jsonl_key(oh, gen + 1, offset, line)) != want


def test_other_keys_are_their_own_prefix() -> None:
    for key in (reset_key(origin_hash("p/a.jsonl"), 3), "h:k:0123456789abcdef", "q:j:abc:0:1:2", "j:broken"):
        assert line_key_prefix(key) == key
