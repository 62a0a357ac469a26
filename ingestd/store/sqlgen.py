"""Upsert statements built from a row type's fields (``ingestd.core.rows``), so a table's column
order is written once, for both stores: SQLite's (``?N`` placeholders) and the central
PostgreSQL store's (``%s``, ``ingestd.central.project``); ``IN (...)`` lists bound in parts."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from typing import Any, TypeVar

T = TypeVar("T")

IN_PART = 500  # values bound per ``IN (...)``: well under SQLite's variable limit


def in_parts(values: Sequence[T], size: int = IN_PART) -> Iterator[tuple[str, tuple[T, ...]]]:
    """``values`` in parts of at most ``size``, each as ``(marks, part)``: ``marks`` the ``?, ?, ...``
    to write inside ``IN (...)``, ``part`` the values to bind to them. Pure."""
    for i in range(0, len(values), size):
        part = tuple(values[i : i + size])
        yield ", ".join("?" * len(part)), part


def upsert_sql(
    table: str,
    fields: Sequence[str],
    key: Sequence[str],
    *,
    update: Sequence[str] | None = None,
    keep: Sequence[str] = (),
    extra: Sequence[tuple[str, int]] = (),
    where: str = "",
    marks: str = "?",
) -> str:
    """``INSERT INTO table (fields) ... ON CONFLICT (key) DO UPDATE`` built from a row type's fields.

    Args:
        table: the table.
        fields: its columns in binding order (a row type's ``_fields``).
        key: the conflict target.
        update: columns replaced on conflict (default every column outside ``key`` and ``keep``);
            ``()``: DO NOTHING.
        keep: columns the default update leaves as stored (``changed_update_sql`` assigns them).
        extra: ``(column, n)``: a further column bound to the n-th (1-based) field's value (with
            ``%s`` marks, which cannot name a parameter twice, the caller binds that value again
            after the fields').
        where: a ``WHERE`` clause of the update (``excluded`` / the table name visible).
        marks: ``"?"`` (SQLite, numbered) or ``"%s"`` (psycopg).
    """
    cols = [*fields, *(c for c, _ in extra)]
    if marks == "?":
        params = [f"?{i}" for i in range(1, len(fields) + 1)] + [f"?{n}" for _, n in extra]
    elif marks == "%s":
        params = ["%s"] * len(cols)
    else:
        raise ValueError(f"placeholder style {marks!r}: '?' or '%s'")
    sets = update if update is not None else [c for c in cols if c not in key and c not in keep]
    head = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({','.join(params)}) ON CONFLICT ({', '.join(key)})"
    if not sets:
        return head + " DO NOTHING"
    return head + " DO UPDATE SET " + ", ".join(f"{c}=excluded.{c}" for c in sets) + where


def changed_update_sql(
    table: str, fields: Sequence[str], key: Sequence[str], cols: Sequence[str]
) -> tuple[str, Callable[[Sequence[Any]], tuple[Any, ...]]]:
    """``UPDATE table SET cols WHERE key AND (a col differs)``, SQLite's, with the function that picks
    its parameters (the key's values, then the cols') from a row of ``fields``.

    For indexed columns that seldom change: SQLite rewrites an index's entry for every column a
    ``SET`` names, equal or not, so an upsert that names them writes their index pages on every
    update. The upsert leaves them out of its ``DO UPDATE`` and this statement, run after it over
    the same rows, assigns them only where one differs; the row ends as the full upsert leaves it.
    """
    k = len(key)
    sets = ", ".join(f"{c} = ?{k + i}" for i, c in enumerate(cols, 1))
    where = " AND ".join(f"{c} = ?{i}" for i, c in enumerate(key, 1))
    differs = " OR ".join(f"{c} IS NOT ?{k + i}" for i, c in enumerate(cols, 1))
    pick = itemgetter(*(fields.index(c) for c in (*key, *cols)))
    return f"UPDATE {table} SET {sets} WHERE {where} AND ({differs})", pick
