"""Text from transcripts and hooks made safe for a terminal (pure).

Titles, project paths, tool names, task descriptions and model ids come from files and hook bodies
anyone can write. Printed raw, a control character in them drives the user's terminal: ``ESC [2J``
clears the screen, ``ESC ] 0;…BEL`` sets the window title, ``CR`` overwrites a line, and a bidi
override (U+202E) reverses what follows (found by a fresh-eyes pass: a ``summary`` title and a
``cwd`` did all of these). The terminal renderers pass every document through ``printable`` first,
which spells such characters out (``\\x1b``, ``\\u202e``); ``--json`` keeps the exact text.
"""

from __future__ import annotations

import unicodedata
from typing import Any

# bidirectional embeddings, overrides, isolates and marks (Unicode's "Trojan Source" set)
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escape(ch: str) -> str:
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def printable_text(s: str) -> str:
    """``s`` with every control character (category Cc) and bidi control spelt out as an escape."""
    if s.isprintable():  # every bidi control is a format character (Cf), which is not printable
        return s
    return "".join(_escape(ch) if unicodedata.category(ch) == "Cc" or ch in _BIDI else ch for ch in s)


def printable(doc: Any) -> Any:
    """A copy of a report document (dicts, lists, strings, numbers) whose strings, keys included,
    are ``printable_text``. Other values are returned as they are.

    Walks with an explicit stack, not recursion: an agent tree nests as deep as its chain of
    agents (SPEC §4.3, unbounded), and recursion failed at a few hundred levels.
    """
    if not isinstance(doc, dict | list | tuple):
        return _leaf(doc)
    # each frame: (the container, its items still to copy, the copy so far, its key in the parent)
    stack: list[tuple[Any, Any, Any, Any]] = [(doc, _items(doc), {} if isinstance(doc, dict) else [], None)]
    while True:
        src, items, out, key = stack[-1]
        item: Any = next(items, _END)
        if item is _END:
            stack.pop()
            done = out if isinstance(src, dict) or type(src) is list else type(src)(out)
            if not stack:
                return done
            _put(stack[-1][2], key, done)
            continue
        k, v = (_leaf(item[0]), item[1]) if isinstance(src, dict) else (None, item)
        if isinstance(v, dict | list | tuple):
            stack.append((v, _items(v), {} if isinstance(v, dict) else [], k))
        else:
            _put(out, k, _leaf(v))


_END = object()


def _leaf(v: Any) -> Any:
    return printable_text(v) if isinstance(v, str) else v


def _items(container: Any) -> Any:
    return iter(container.items()) if isinstance(container, dict) else iter(container)


def _put(out: Any, key: Any, value: Any) -> None:
    if isinstance(out, dict):
        out[key] = value
    else:
        out.append(value)
