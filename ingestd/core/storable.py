"""Text every store can hold: the one rule for projected text and the log's identifier columns. Pure.

SQLite keeps any text apsw can encode; PostgreSQL's ``text`` holds no U+0000 and a btree index
entry of at most 2,704 bytes, so a value one store takes and the other refuses would stop the
central projection (or a host's shipping) for good. Both stores therefore hold the same storable
form of every projected text value and of the log's ``session_id``, ``event_type`` and ``origin``
columns, made by ``storable`` (the payload keeps the exact bytes, SPEC §3):

1. U+0000 becomes U+2400 (SYMBOL FOR NULL, the character Unicode has for showing one);
2. a lone surrogate U+D800+n becomes U+F0000+n, the map the decoder already applies to decoded JSON
   (``ingestd.core.decode``), so a value decoded elsewhere agrees with it;
3. a value longer than ``MAX_TEXT_BYTES`` of UTF-8 keeps its head and its tail around a marker
   naming its length and a hash of the whole: ``<head>…[<n> bytes blake2b <16 hex>]…<tail>``, at most
   ``MAX_TEXT_BYTES`` bytes. Every indexed text column can hold it (a key of four such columns is
   under 2,704 bytes); the longest value of any projected column in the real corpus is 73 bytes.

``storable`` is idempotent (a storable value is its own storable form), so a value made storable
where it was logged, then again where it was shipped and again where it was projected, is the same
value in both stores: central = local stays exact. It is not injective: values that differ only
where it maps them (a U+0000 and a U+2400 at the same place, or two over-long values with the same
head, tail and hash) are one value in every store.
"""

from __future__ import annotations

import re
from hashlib import blake2b

from ingestd.core.decode import PUA_BASE

MAX_TEXT_BYTES = 512
NUL_SYMBOL = "\u2400"
_HEAD_BYTES = 320
_TAIL_BYTES = 128
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# a value this many characters long is under MAX_TEXT_BYTES whatever they are (4 bytes at most each)
_SHORT_CHARS = MAX_TEXT_BYTES // 4


def _char(m: re.Match[str]) -> str:
    c = m.group()
    return NUL_SYMBOL if c == "\x00" else chr(PUA_BASE + ord(c) - 0xD800)


def _cut(data: bytes, n: int, *, tail: bool) -> str:
    """At most ``n`` bytes of UTF-8 ``data`` from its start (or its end), whole characters only."""
    part = data[-n:] if tail else data[:n]
    return part.decode("utf-8", "ignore")


def storable(s: str, *, limit: int | None = MAX_TEXT_BYTES) -> str:
    """``s`` in the form both stores hold (the module docstring's three rules).

    Args:
        s: any text (lone surrogates included).
        limit: the length rule's bound in bytes of UTF-8 (``MAX_TEXT_BYTES``); None: no bound (a
            column no index holds whole).

    Returns:
        ``s`` itself when it is storable already (the common case: no copy), else its storable form.
    """
    if s.isascii():
        if "\x00" not in s and (limit is None or len(s) <= limit):
            return s
    elif _UNSTORABLE.search(s) is None and (limit is None or len(s) <= _SHORT_CHARS):
        return s
    fixed = _UNSTORABLE.sub(_char, s)
    if limit is None:
        return fixed
    data = fixed.encode("utf-8")
    if len(data) <= limit:
        return fixed
    digest = blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    mark = f"…[{len(data)} bytes blake2b {digest}]…"
    room = limit - len(mark.encode("utf-8"))
    tail = min(_TAIL_BYTES, room // 3)
    return _cut(data, min(_HEAD_BYTES, room - tail), tail=False) + mark + _cut(data, tail, tail=True)


def storable_or_none(s: str | None) -> str | None:
    """``storable(s)``, None kept."""
    return None if s is None else storable(s)
