"""Canonical dumps of the projection tables and their comparison (``ingestd replay``).

A table's dump is every row, every column, in primary-key order, streamed into a
digest; only when two digests differ does a merge walk materialise the first
differing rows. Read-only throughout; memory is one row per stream.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ingestd.store.connection import Db, storage_errors

# (table, primary key columns): every projection, checkpoints excluded (SPEC §9).
TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sessions", ("id",)),
    ("agents", ("session_id", "id")),
    ("orchestration_edges", ("id",)),
    ("token_usage", ("message_id",)),
    ("tool_calls", ("session_id", "tool_use_id")),
    ("compactions", ("session_id", "boundary_id")),
    ("tasks", ("session_id", "task_id")),
    ("prompts", ("session_id", "prompt_id")),
    ("cc_model_usage", ("session_id", "model")),
    ("events", ("raw_event_id",)),
    ("rate_limit_samples", ("raw_event_id",)),
    ("otel_requests", ("session_id", "request_key")),
    ("otel_metric_points", ("raw_event_id",)),
    # a document's ids are its log row's (arrival order): its record's place and label identify it
    # (its text is only in the full-text index, which the view does not show)
    ("search_docs", ("session_id", "uuid", "seq", "kind", "occurred_at", "agent_id", "label")),
    ("quarantine", ("raw_event_id", "reason")),
    ("summaries", ("origin", "origin_gen", "origin_offset")),
    ("token_usage_rollup", ("session_id", "model", "slot", "rate_effective_from", "tier", "speed", "inference_geo")),
)
# Surrogate ids assigned in arrival order: they are storage, not projection, and differ
# between rebuilds by design; the table's natural key identifies its rows.
ARRIVAL_IDS: dict[str, tuple[str, ...]] = {"token_usage": ("id",), "search_docs": ("doc_id", "raw_event_id")}
MAX_DIFFS = 5
Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Dump:
    """One table's canonical dump summary.

    Attributes:
        table: str.
        columns: tuple[str, ...], in declaration order.
        rows: int.
        digest: str, blake2b-16 hex over the rows' canonical encodings in primary-key order.
    """

    table: str
    columns: tuple[str, ...]
    rows: int
    digest: str


@dataclass(frozen=True, slots=True)
class Difference:
    """A row present or different between two dumps.

    Attributes:
        table: str.
        key: dict[str, Any], the primary key.
        left: dict[str, Any] | None, the row on the left side (None: absent there).
        right: dict[str, Any] | None, the row on the right side.
    """

    table: str
    key: dict[str, Any]
    left: dict[str, Any] | None
    right: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        """JSON shape (bytes as hex)."""
        return {
            "table": self.table,
            "key": _jsonable(self.key),
            "left": _jsonable(self.left),
            "right": _jsonable(self.right),
        }


def _jsonable(d: dict[str, Any] | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {k: (v.hex() if isinstance(v, bytes) else v) for k, v in d.items()}


def columns(conn: Db, table: str) -> tuple[str, ...]:
    """The table's compared columns in declaration order (empty when the table does not exist). Read-only.

    Arrival-order surrogate ids (``ARRIVAL_IDS``) are left out.
    """
    skip = ARRIVAL_IDS.get(table, ())
    return tuple(str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})") if str(r[1]) not in skip)


def _rows(conn: Db, table: str, cols: Sequence[str], pk: Sequence[str]) -> Iterator[Row]:
    sel = ", ".join(f'"{c}"' for c in cols)
    order = ", ".join(f'"{c}"' for c in pk)
    with storage_errors():
        yield from conn.execute(f'SELECT {sel} FROM "{table}" ORDER BY {order}')


def canonical_rows(conn: Db, table: str) -> list[Row]:
    """Every row of a projection table as replay compares it: compared columns, primary-key order.

    Materialises the table: for tests and small databases (``dump`` streams).
    """
    pk = dict(TABLES)[table]
    return list(_rows(conn, table, columns(conn, table), pk))


def encode(row: Row) -> bytes:
    """Canonical bytes of a row: ``repr`` keeps types apart (1 vs '1' vs 1.0 vs b'1'). Pure."""
    return repr(row).encode("utf-8", "surrogatepass") + b"\n"


def dump(conn: Db, table: str, pk: Sequence[str], on_rows: Callable[[int], None] | None = None) -> Dump:
    """Stream ``table`` in primary-key order into a digest. Read-only; bounded memory."""
    cols = columns(conn, table)
    h = hashlib.blake2b(digest_size=16)
    h.update(encode(cols))
    n = 0
    for row in _rows(conn, table, cols, pk):
        h.update(encode(row))
        n += 1
        if on_rows is not None and n % 10000 == 0:
            on_rows(10000)
    if on_rows is not None:
        on_rows(n % 10000)
    return Dump(table, cols, n, h.hexdigest())


def _sort_key(values: Row) -> tuple[tuple[int, Any], ...]:
    # SQLite's order of storage classes: NULL < numbers < text < blob (BINARY collation = code points).
    def one(v: Any) -> tuple[int, Any]:
        if v is None:
            return (0, 0)
        if isinstance(v, int | float):
            return (1, v)
        if isinstance(v, str):
            return (2, v)
        return (3, bytes(v))

    return tuple(one(v) for v in values)


def first_differences(left: Db, right: Db, table: str, pk: Sequence[str], limit: int = MAX_DIFFS) -> list[Difference]:
    """Merge-walk both tables in primary-key order; the first ``limit`` differing rows. Read-only."""
    lcols, rcols = columns(left, table), columns(right, table)
    if lcols != rcols:
        return [Difference(table, {"columns": "differ"}, {"columns": list(lcols)}, {"columns": list(rcols)})]
    idx = [lcols.index(c) for c in pk]
    out: list[Difference] = []
    li, ri = _rows(left, table, lcols, pk), _rows(right, table, rcols, pk)
    lrow, rrow = next(li, None), next(ri, None)

    def as_dict(r: Row | None) -> dict[str, Any] | None:
        return None if r is None else dict(zip(lcols, r, strict=True))

    while (lrow is not None or rrow is not None) and len(out) < limit:
        lk = _sort_key(tuple(lrow[i] for i in idx)) if lrow is not None else None
        rk = _sort_key(tuple(rrow[i] for i in idx)) if rrow is not None else None
        if lk is not None and (rk is None or lk < rk):
            assert lrow is not None
            out.append(Difference(table, {c: lrow[i] for c, i in zip(pk, idx, strict=True)}, as_dict(lrow), None))
            lrow = next(li, None)
        elif rk is not None and (lk is None or rk < lk):
            assert rrow is not None
            out.append(Difference(table, {c: rrow[i] for c, i in zip(pk, idx, strict=True)}, None, as_dict(rrow)))
            rrow = next(ri, None)
        else:
            assert lrow is not None and rrow is not None
            if encode(lrow) != encode(rrow):
                key = {c: lrow[i] for c, i in zip(pk, idx, strict=True)}
                out.append(Difference(table, key, as_dict(lrow), as_dict(rrow)))
            lrow, rrow = next(li, None), next(ri, None)
    return out


@dataclass(frozen=True, slots=True)
class Comparison:
    """The dumps of every side for every table, and the first differences per mismatching pair.

    Attributes:
        sides: tuple[str, ...], names of the compared databases (``live``, ``replay_a``, ``replay_b``).
        dumps: dict[str, list[Dump]], per table, one ``Dump`` per side (same order as ``sides``).
        differences: dict[str, list[Difference]], per ``"<table>: <side> vs <side>"``.
    """

    sides: tuple[str, ...]
    dumps: dict[str, list[Dump]]
    differences: dict[str, list[Difference]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """All sides agree on every table."""
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        """JSON shape: ``ok``, ``sides``, ``tables`` (rows per side, digest, equal), ``differences``."""
        return {
            "ok": self.ok,
            "sides": list(self.sides),
            "tables": [
                {
                    "table": t,
                    "rows": {s: d.rows for s, d in zip(self.sides, ds, strict=True)},
                    "digest": ds[0].digest,
                    "equal": len({d.digest for d in ds}) == 1,
                }
                for t, ds in self.dumps.items()
            ],
            "differences": {k: [d.to_json() for d in v] for k, v in self.differences.items()},
        }


def compare(
    conns: Sequence[tuple[str, Db]],
    tables: Sequence[tuple[str, tuple[str, ...]]] = TABLES,
    *,
    limit: int = MAX_DIFFS,
    on_rows: Callable[[int], None] | None = None,
) -> Comparison:
    """Dump every table on every side; for each side differing from the first, the first differing rows.

    Read-only. The first side is the reference (``live``): each other side is compared with it, and
    when the others also differ from each other that pair is reported too.
    """
    names = tuple(n for n, _ in conns)
    dumps: dict[str, list[Dump]] = {}
    diffs: dict[str, list[Difference]] = {}
    for table, pk in tables:
        ds = [dump(c, table, pk, on_rows) for _, c in conns]
        dumps[table] = ds
        pairs = [(0, j) for j in range(1, len(conns))] + [
            (i, j) for i in range(1, len(conns)) for j in range(i + 1, len(conns))
        ]
        for i, j in pairs:
            if (ds[i].digest, ds[i].columns) != (ds[j].digest, ds[j].columns):
                found = first_differences(conns[i][1], conns[j][1], table, pk, limit)
                if found:
                    diffs[f"{table}: {names[i]} vs {names[j]}"] = found
    return Comparison(names, dumps, diffs)
