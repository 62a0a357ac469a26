"""Deterministic keys and ids (DESIGN.md "The log", "Projections"), pure."""

from __future__ import annotations

from hashlib import blake2b


def short_hash(data: bytes) -> str:
    """16 hex digits of blake2b-8 of ``data``."""
    return blake2b(data, digest_size=8).hexdigest()


def jsonl_key(origin_hash: str, gen: int, offset: int, line: bytes) -> str:
    """The idempotency key of one transcript line.

    ``j:<blake2b-8(origin)>:<gen>:<offset, 12 hex>:<blake2b-8(line)>``: ordered by
    origin then offset, so the UNIQUE index appends sequentially within a file (SPEC
    §11: 14x faster than random keys); the content hash makes a file rewritten in
    place add rows instead of colliding; ``gen`` separates re-reads after a reset.

    Args:
        origin_hash: ``short_hash(origin.encode())`` (computed once per file).
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
