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

    ``j:<blake2b-8(origin)>:<gen>:<offset, 12 hex>:<blake2b-8(line)>``: the content hash
    makes a file rewritten in place add rows instead of colliding; ``gen`` separates re-reads
    after a reset. The log keeps only the line's hash (``ingestd.store.logrows.line_check``) and
    rebuilds the rest from the row's origin, generation and offset, whose index then appends
    sequentially within a file.

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


def reset_key(origin_hash: str, gen: int) -> str:
    """The key of the ``file_reset`` row that opens generation ``gen`` of an origin."""
    return f"r:{origin_hash}:{gen}"


def stable_id(*parts: str) -> int:
    """A 63-bit positive int from blake2b of ``parts`` (NUL-joined): deterministic row ids."""
    h = blake2b("\x00".join(parts).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(h, "big") >> 1


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
