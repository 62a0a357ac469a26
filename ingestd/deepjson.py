"""JSON of documents nested deeper than orjson allows (an agent tree: SPEC §4.3, depth unbounded).

orjson refuses a document nested more than 255 levels ("Recursion limit reached"), and the
standard library's encoder recurses (RecursionError near 1000): an agent chain of a few hundred
levels could not be printed with ``ingestd tree --json`` nor served by ``/api/sessions/{id}/tree``.
``dumps`` uses orjson, and only for a document it refuses walks the containers itself, with an
explicit stack, writing the same bytes orjson would (scalars are still encoded by orjson).
"""

from __future__ import annotations

from typing import Any

import orjson

_END = object()


def dumps(doc: Any, option: int = 0) -> bytes:
    """``orjson.dumps(doc, option=option)``, also for a document nested deeper than orjson allows.

    Args:
        doc: dicts (string keys), lists, tuples and scalars orjson encodes.
        option: orjson options; ``OPT_INDENT_2`` is honoured for the deep path, the others are
            passed to orjson for each scalar.

    Raises:
        orjson.JSONEncodeError: a value orjson cannot encode.
    """
    try:
        return orjson.dumps(doc, option=option)
    except orjson.JSONEncodeError as e:
        if "Recursion limit" not in str(e):
            raise
    return _deep(doc, option)


def _deep(doc: Any, option: int) -> bytes:
    indent = bool(option & orjson.OPT_INDENT_2)
    scalar_option = option & ~orjson.OPT_INDENT_2
    parts: list[bytes] = []
    # each frame: [items still to write, closing bracket, level, first item?, is a dict?]
    stack: list[list[Any]] = []

    def value(v: Any, level: int) -> None:
        if isinstance(v, dict) and v:
            parts.append(b"{")
            stack.append([iter(v.items()), b"}", level + 1, True, True])
        elif isinstance(v, list | tuple) and v:
            parts.append(b"[")
            stack.append([iter(v), b"]", level + 1, True, False])
        else:
            parts.append(orjson.dumps(v, option=scalar_option))

    value(doc, 0)
    while stack:
        frame = stack[-1]
        item: Any = next(frame[0], _END)
        if item is _END:
            stack.pop()
            parts.append((b"\n" + b"  " * (frame[2] - 1) if indent else b"") + frame[1])
            continue
        if not frame[3]:
            parts.append(b",")
        frame[3] = False
        if indent:
            parts.append(b"\n" + b"  " * frame[2])
        if frame[4]:
            key, item = item
            parts.append(orjson.dumps(key if isinstance(key, str) else str(key)) + (b": " if indent else b":"))
        value(item, frame[2])
    return b"".join(parts)
