"""Deterministic keys and ids (DESIGN.md "The log", "Projections"), pure."""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import blake2b


def short_hash(data: bytes) -> str:
    """16 hex digits of blake2b-8 of ``data``."""
    return blake2b(data, digest_size=8).hexdigest()


def origin_hash(origin: str) -> str:
    """The hash of an origin that starts its rows' keys (``short_hash`` of its path as UTF-8, a
    byte that is not UTF-8 kept as its surrogate escape)."""
    return short_hash(origin.encode("utf-8", "surrogateescape"))


def jsonl_key(origin_hash: str, gen: int, offset: int, line: bytes) -> str:
    """The idempotency key of one transcript line.

    ``j:<blake2b-8(origin)>:<gen>:<offset, 12 hex>:<blake2b-8(line)>``: ordered by
    origin then offset, so the UNIQUE index appends sequentially within a file (SPEC
    §11: 14x faster than random keys); the content hash makes a file rewritten in
    place add rows instead of colliding; ``gen`` separates re-reads after a reset.

    Args:
        origin_hash: ``origin_hash(origin)`` (computed once per file).
        gen: int, the origin's rewrite generation.
        offset: int, byte offset of the line.
        line: bytes, the line as read.
    """
    return f"j:{origin_hash}:{gen}:{offset:012x}:{blake2b(line, digest_size=8).hexdigest()}"


def jsonl_key_of_digest(origin_hash: str, gen: int, offset: int, digest: str) -> str:
    """``jsonl_key`` given the line's blake2b-8 hex instead of its bytes (an oversized line,
    hashed while it streamed past: ``ingestd.core.framing.Oversized.digest``)."""
    return f"j:{origin_hash}:{gen}:{offset:012x}:{digest}"


def line_key_prefix(key: str) -> str:
    """What a transcript line's key shares with the other lines of its file and generation:
    ``j:<origin hash>:<gen>:`` (``jsonl_key``, ``jsonl_key_of_digest``); any other key is its own.

    Keys of one prefix sort by offset, so the lines of one file and generation in a batch lie
    between their smallest and largest key (``ingestd.store.payload_blocks``). Pure.
    """
    if key.startswith("j:"):
        hash_end = key.find(":", 2)
        gen_end = key.find(":", hash_end + 1) if hash_end > 2 else -1
        if gen_end > hash_end + 1:
            return key[: gen_end + 1]
    return key


def reset_key(origin_hash: str, gen: int) -> str:
    """The key of the ``file_reset`` row that opens generation ``gen`` of an origin."""
    return f"r:{origin_hash}:{gen}"


def stable_id(*parts: str) -> int:
    """A 63-bit positive int from blake2b of ``parts`` (NUL-joined): deterministic row ids."""
    h = blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(h, "big") >> 1


def origin_key_ranges(origin_hash: str, gen: int | None = None) -> tuple[tuple[str, str], ...]:
    """Half-open ranges ``[low, high)`` of idempotency keys that hold every key of an origin's rows.

    The log has no index on ``origin`` (migration 0017): a file's rows are found through the
    unique key index instead. They are its lines (``jsonl_key``: ``j:<hash>:<gen>:...``), its
    ``file_reset`` rows (``reset_key``) and the quarantine markers of either (``q:<key>``,
    ``ingestd.store.logrows.quarantine_marker``). A range may also hold rows of another origin
    with the same hash: callers still compare ``origin``.

    Args:
        origin_hash: ``origin_hash(origin)``.
        gen: only this rewrite generation; None for all.

    Returns:
        The ranges, ASCII strings (keys are ASCII, so ``prefix + DEL`` bounds a prefix).
    """
    if gen is None:
        prefixes = (f"j:{origin_hash}:", f"r:{origin_hash}:", f"q:j:{origin_hash}:", f"q:r:{origin_hash}:")
        return tuple((p, p + "\x7f") for p in prefixes)
    lines = f"j:{origin_hash}:{gen}:"
    reset = reset_key(origin_hash, gen)
    return (
        (lines, lines + "\x7f"),
        (reset, reset + "\x00"),  # that key alone (generation 1 is not a prefix of 10's)
        ("q:" + lines, "q:" + lines + "\x7f"),
        ("q:" + reset, "q:" + reset + "\x00"),
    )


ZERO_DIGEST = "0" * 32


def chain_digest(digest: str, keys: Iterable[str]) -> str:
    """A running digest of idempotency keys: ``digest`` (32 hex digits) extended by ``keys`` in order.

    ``d_0 = ZERO_DIGEST``, ``d_n = blake2b-16(d_{n-1} + key_n as UTF-8)``: extending by ``a`` then by
    ``b`` equals extending by ``a + b``, so two parties that extend it over the same keys in any
    slices agree, and two sequences of keys agree only if they are the same (team mode's shipping
    evidence, ``ingestd.central.ship``). Pure.
    """
    d = bytes.fromhex(digest)
    for k in keys:
        d = blake2b(d + k.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return d.hex()
