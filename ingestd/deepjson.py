"""JSON of documents nested deeper than orjson allows (an agent tree: SPEC §4.3, depth unbounded).

orjson refuses a document nested more than 255 levels ("Recursion limit reached"), and the
standard library's encoder recurses (RecursionError near 1000): an agent chain of a few hundred
levels could not be printed with ``ingestd tree --json`` nor served by ``/api/sessions/{id}/tree``.
``dumps`` uses orjson, and only for a document it refuses walks the containers itself, with an
explicit stack, writing the same bytes orjson would (scalars are still encoded by orjson).

Two bounds on that walk (without them a 2000-deep chain prints 491 MB with 1.76 GB peak RSS, and
5000 levels a file cut at 2 GiB):

- indentation stops growing at ``MAX_INDENT_LEVELS`` (as the text tree stops indenting), so the
  output grows with the number of lines, not lines times depth; a document orjson encodes keeps
  orjson's indentation, byte for byte;
- the bytes are gathered in a ``bytearray`` and handed out in chunks of about ``CHUNK_BYTES``
  (``chunks``): each ``orjson.dumps`` of a scalar returns a 4 KiB buffer however short its text,
  and keeping one per scalar cost ~180 KiB per tree node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

MAX_INDENT_LEVELS = 32
"""Levels a deep document's indentation grows to; deeper lines are indented as this level."""

CHUNK_BYTES = 1 << 16

_END = object()


def dumps(doc: Any, option: int = 0) -> bytes:
    """``orjson.dumps(doc, option=option)``, also for a document nested deeper than orjson allows.

    Args:
        doc: dicts (string keys), lists, tuples and scalars orjson encodes.
        option: orjson options; ``OPT_INDENT_2`` is honoured for the deep path (indentation capped
            at ``MAX_INDENT_LEVELS``), the others are passed to orjson for each scalar.

    Raises:
        orjson.JSONEncodeError: a value orjson cannot encode.
    """
    return b"".join(chunks(doc, option))


def chunks(doc: Any, option: int = 0) -> Iterator[bytes]:
    """``dumps(doc, option)`` in pieces (about ``CHUNK_BYTES`` each for a deep document); lazy.

    Raises:
        orjson.JSONEncodeError: a value orjson cannot encode (possibly after pieces were yielded).
    """
    try:
        yield orjson.dumps(doc, option=option)
        return
    except orjson.JSONEncodeError as e:
        if "Recursion limit" not in str(e):
            raise
    yield from _deep_chunks(doc, option)


def _deep_chunks(doc: Any, option: int) -> Iterator[bytes]:
    indent = bool(option & orjson.OPT_INDENT_2)
    scalar_option = option & ~orjson.OPT_INDENT_2
    out = bytearray()
    # each frame: [items still to write, closing bracket, level, first item?, is a dict?]
    stack: list[list[Any]] = []

    def newline(level: int) -> bytes:
        return b"\n" + b"  " * min(level, MAX_INDENT_LEVELS) if indent else b""

    def value(v: Any, level: int) -> None:
        if isinstance(v, dict) and v:
            out.extend(b"{")
            stack.append([iter(v.items()), b"}", level + 1, True, True])
        elif isinstance(v, list | tuple) and v:
            out.extend(b"[")
            stack.append([iter(v), b"]", level + 1, True, False])
        else:
            out.extend(orjson.dumps(v, option=scalar_option))

    value(doc, 0)
    while stack:
        if len(out) >= CHUNK_BYTES:
            yield bytes(out)
            out.clear()
        frame = stack[-1]
        item: Any = next(frame[0], _END)
        if item is _END:
            stack.pop()
            out.extend(newline(frame[2] - 1) + frame[1])
            continue
        if not frame[3]:
            out.extend(b",")
        frame[3] = False
        out.extend(newline(frame[2]))
        if frame[4]:
            key, item = item
            out.extend(orjson.dumps(key if isinstance(key, str) else str(key)) + (b": " if indent else b":"))
        value(item, frame[2])
    yield bytes(out)
