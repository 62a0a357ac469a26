"""Insert into a JSON document's text without touching the rest of it. Pure.

``hooks install`` adds entries to a user's ``settings.json``. Re-serialising the whole document
would reflow every line the user laid out by hand (an array on one line, aligned values), and the
``--dry-run`` diff would show all of them. Here the text is parsed into spans (where each value
starts and ends), and each insertion is spliced in after the container's last element, indented
one level deeper than the container, so every other byte stays as it was.

``parse`` accepts what ``json.loads`` accepts for settings (objects, arrays, strings with
escapes, numbers, literals) and raises ``ValueError`` for anything else; callers check the result
by parsing it back and fall back to re-serialising when it differs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

WS = " \t\r\n"


@dataclass(slots=True)
class Span:
    """One value's place in the text.

    Attributes:
        start: int, offset of its first character.
        end: int, offset just past its last character.
        members: dict of str to Span, an object's values by key (the last of duplicate keys wins).
        items: list of Span, an array's elements.
        kind: str, ``"object"``, ``"array"`` or ``"scalar"``.
        key_start: int, for an object's member, the offset of its key (-1 otherwise).
    """

    start: int
    end: int
    kind: str
    members: dict[str, Span] = field(default_factory=dict)
    items: list[Span] = field(default_factory=list)
    key_start: int = -1

    def children(self) -> list[Span]:
        """An object's members or an array's elements, in text order."""
        return sorted(self.members.values(), key=lambda c: c.start) if self.kind == "object" else self.items

    def first(self) -> int:
        """Where this value begins as a child: its key for a member, else the value itself."""
        return self.key_start if self.key_start >= 0 else self.start


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in WS:
        i += 1
    return i


def _string_end(text: str, i: int) -> int:
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == '"':
            return j + 1
        j += 1
    raise ValueError(f"unterminated string at {i}")


def _member(text: str, j: int, depth: int, span: Span) -> Span:
    """One ``"key": value`` of the object ``span`` at ``j``, recorded in ``span.members``."""
    j = _skip(text, j)
    if j >= len(text) or text[j] != '"':
        raise ValueError(f"expected a key at {j}")
    kstart, kend = j, _string_end(text, j)
    key = json.loads(text[j:kend])
    j = _skip(text, kend)
    if j >= len(text) or text[j] != ":":
        raise ValueError(f"expected ':' at {j}")
    child = _value(text, j + 1, depth + 1)
    child.key_start = kstart
    span.members[key] = child
    return child


def _container(text: str, i: int, depth: int, kind: str) -> Span:
    """The object or array opening at ``i``: its members (object) or items (array), one loop for both."""
    close = "}" if kind == "object" else "]"
    span = Span(i, i, kind)
    j = _skip(text, i + 1)
    if j < len(text) and text[j] == close:
        span.end = j + 1
        return span
    while True:
        if kind == "object":
            child = _member(text, j, depth, span)
        else:
            child = _value(text, j, depth + 1)
            span.items.append(child)
        j = _skip(text, child.end)
        if j < len(text) and text[j] == ",":
            j += 1
            continue
        if j < len(text) and text[j] == close:
            span.end = j + 1
            return span
        raise ValueError(f"expected ',' or '{close}' at {j}")


def _value(text: str, i: int, depth: int) -> Span:
    if depth > 200:
        raise ValueError("nested too deeply")
    i = _skip(text, i)
    if i >= len(text):
        raise ValueError("unexpected end")
    c = text[i]
    if c in "{[":
        return _container(text, i, depth, "object" if c == "{" else "array")
    if c == '"':
        return Span(i, _string_end(text, i), "scalar")
    j = i
    while j < len(text) and text[j] not in WS + ",]}":
        j += 1
    if j == i:
        raise ValueError(f"unexpected {c!r} at {i}")
    return Span(i, j, "scalar")


def parse(text: str) -> Span:
    """The spans of the one JSON value in ``text``.

    Raises:
        ValueError: ``text`` is not one JSON value.
    """
    root = _value(text, 0, 0)
    if _skip(text, root.end) != len(text):
        raise ValueError("text after the value")
    return root


@dataclass(frozen=True, slots=True)
class Layout:
    """How inserted values are written.

    Attributes:
        indent: str | None, one level of indentation; None: everything on one line.
        key_sep: str, between a key and its value.
        item_sep: str, between items on one line.
        ascii: bool, non-ASCII as ``\\u`` escapes.
    """

    indent: str | None = "  "
    key_sep: str = ": "
    item_sep: str = ","
    ascii: bool = False


def _dump(value: Any, layout: Layout, depth: int) -> str:
    out = json.dumps(
        value, indent=layout.indent, separators=(layout.item_sep, layout.key_sep), ensure_ascii=layout.ascii
    )
    if layout.indent is None:
        return out
    return out.replace("\n", "\n" + layout.indent * depth)


def insertion(text: str, container: Span, pieces: list[str], depth: int, layout: Layout) -> tuple[int, str]:
    """Where and what to insert to append ``pieces`` (already dumped at ``depth + 1``) to ``container``.

    Args:
        text: the document.
        container: an object or array span; its contents are one level deeper than ``depth``.
        pieces: the new members (``"key": value``) or elements, as text.
        depth: the container's nesting depth (the top-level value is 0).
        layout: the document's layout.

    Returns:
        (offset, text to insert there).
    """
    if layout.indent is None:
        sep = layout.item_sep
        body = sep.join(pieces)
        children = list(container.members.values()) if container.kind == "object" else container.items
        if children:
            return children[-1].end, sep + body
        return container.end - 1, body
    inner = "\n" + layout.indent * (depth + 1)
    body = ("," + inner).join(pieces)
    children = list(container.members.values()) if container.kind == "object" else container.items
    if children:
        last = max(children, key=lambda s: s.end)
        return last.end, "," + inner + body
    return container.end - 1, inner + body + "\n" + layout.indent * depth


def member(key: str, value: Any, layout: Layout, depth: int) -> str:
    """``"key": value`` as text for an object at ``depth`` (the member sits at ``depth + 1``)."""
    return json.dumps(key, ensure_ascii=layout.ascii) + layout.key_sep + _dump(value, layout, depth + 1)


def element(value: Any, layout: Layout, depth: int) -> str:
    """``value`` as text for an array at ``depth`` (the element sits at ``depth + 1``)."""
    return _dump(value, layout, depth + 1)


def removals(container: Span, gone: list[Span]) -> list[tuple[int, int]]:
    """The text ranges that remove ``gone`` (some of ``container``'s children) with their commas.

    A child after a kept one goes with the separator before it (``,`` and the line break), so a
    laid-out list loses exactly its lines; leading children go up to the first kept one. Ranges
    never overlap. Removing every child empties the container to its brackets.
    """
    kids = container.children()
    ids = {id(g) for g in gone}
    kept = [k for k in kids if id(k) not in ids]
    if not kept:
        return [(container.start + 1, container.end - 1)] if kids else []
    out = []
    first_kept = kids.index(kept[0])
    if first_kept > 0:
        out.append((kids[0].first(), kept[0].first()))
    for i in range(first_kept + 1, len(kids)):
        if id(kids[i]) in ids:
            out.append((kids[i - 1].end, kids[i].end))
    return out


def remove(text: str, ranges: list[tuple[int, int]]) -> str:
    """``text`` without the (non-overlapping) ``ranges``."""
    for start, end in sorted(ranges, reverse=True):
        text = text[:start] + text[end:]
    return text


def apply(text: str, edits: list[tuple[int, str]]) -> str:
    """``text`` with each ``(offset, insert)`` applied (offsets into the original text)."""
    for offset, piece in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:offset] + piece + text[offset:]
    return text
