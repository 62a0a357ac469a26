"""``ingestd replay``: the projections are a pure function of the log (SPEC §1, §12).

1. Snapshot the live database with the backup API (one consistent read, so the
   daemon can keep writing; everything below reads the snapshot).
2. Rebuild every projection from the snapshot's ``events_raw`` alone into two
   fresh migrated databases, with different batch sizes and reversed origin
   order (``ingestd.ingest.rebuild.rebuild_projections``), copying the price rows
   first (they are operator data, not log) and honouring prune receipts after
   (``ingestd.retention.prune.apply_receipts``: what prune removed stays removed).
3. Compare canonical dumps of every projection table (every column, ordered by
   primary key), streamed: a per-table digest first, and only for a table whose
   digests differ, a merge walk that materialises the first differing rows.

Memory is bounded by the rebuild and one row per stream; disk needs three copies.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import apsw

from ingestd.errors import StorageError
from ingestd.retention import prune as pr
from ingestd.retention.backup import copy_database
from ingestd.store.connection import connect, storage_errors, translate, write_txn
from ingestd.store.migrate import migrate

# (table, primary key columns): every projection, checkpoints excluded (SPEC §9).
TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sessions", ("id",)),
    ("agents", ("id",)),
    ("orchestration_edges", ("id",)),
    ("token_usage", ("id",)),
    ("tool_calls", ("session_id", "tool_use_id")),
    ("compactions", ("session_id", "boundary_id")),
    ("events", ("raw_event_id",)),
    ("token_usage_rollup", ("session_id", "model", "bucket", "slot", "rate_effective_from")),
)
FIRST_BATCH_SIZE = 5000
SECOND_BATCH_SIZE = 317  # small and prime, so batch boundaries fall elsewhere
MAX_DIFFS = 5
Row = tuple[Any, ...]


class Rebuilder(Protocol):
    """``rebuild_projections(src, dst, *, batch_size, origin_order)`` (the ingestion side)."""

    def __call__(
        self, src: apsw.Connection, dst: apsw.Connection, /, *, batch_size: int, origin_order: str
    ) -> object: ...


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


def columns(conn: apsw.Connection, table: str) -> tuple[str, ...]:
    """The table's columns in declaration order (empty when the table does not exist). Read-only."""
    return tuple(str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})"))


def _rows(conn: apsw.Connection, table: str, cols: Sequence[str], pk: Sequence[str]) -> Iterator[Row]:
    sel = ", ".join(f'"{c}"' for c in cols)
    order = ", ".join(f'"{c}"' for c in pk)
    with storage_errors():
        yield from conn.execute(f'SELECT {sel} FROM "{table}" ORDER BY {order}')


def encode(row: Row) -> bytes:
    """Canonical bytes of a row: ``repr`` keeps types apart (1 vs '1' vs 1.0 vs b'1'). Pure."""
    return repr(row).encode("utf-8", "surrogatepass") + b"\n"


def dump(conn: apsw.Connection, table: str, pk: Sequence[str], on_rows: Callable[[int], None] | None = None) -> Dump:
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


def first_differences(
    left: apsw.Connection, right: apsw.Connection, table: str, pk: Sequence[str], limit: int = MAX_DIFFS
) -> list[Difference]:
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
    conns: Sequence[tuple[str, apsw.Connection]],
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


def _scratch_db(path: Path) -> apsw.Connection:
    """A fresh, migrated database for a rebuild. Durability is irrelevant here: it is thrown away."""
    try:
        conn = apsw.Connection(str(path))
        conn.execute("PRAGMA journal_mode=MEMORY")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA foreign_keys=ON")
    except apsw.Error as e:
        raise translate(e) from e
    migrate(conn)
    return conn


def _copy_prices(src: apsw.Connection, dst: apsw.Connection) -> None:
    """Make ``dst``'s price rows exactly the source's (operator rows included)."""
    rows = src.execute(
        "SELECT model, bucket, usd_per_mtok, effective_from, source, verified_at FROM model_pricing"
    ).fetchall()

    def body(c: apsw.Connection) -> None:
        c.execute("DELETE FROM model_pricing")
        c.executemany(
            "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source, verified_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )

    write_txn(dst, body)


def rebuild_into(
    src: apsw.Connection, dst: apsw.Connection, rebuilder: Rebuilder, *, batch_size: int, origin_order: str
) -> int:
    """Prices, then the projections from ``src``'s log, then prune receipts, into ``dst``.

    Returns:
        Rows removed by prune receipts.
    """
    _copy_prices(src, dst)
    rebuilder(src, dst, batch_size=batch_size, origin_order=origin_order)
    recs = pr.receipts(src)
    if not recs:
        return 0
    return write_txn(dst, lambda c: pr.apply_receipts(c, recs))


def live_ctx(conn: apsw.Connection) -> tuple[str, str] | None:
    """The ``(instance, host_id)`` the live projector stamped on edges, so a rebuild stamps the same.

    ``meta`` keys ``instance`` and ``host_id`` when present; else the most common pair on the live
    ``orchestration_edges``; None when there is neither. Read-only.
    """
    meta = {
        str(r[0]): str(r[1]) for r in conn.execute("SELECT key, value FROM meta WHERE key IN ('instance', 'host_id')")
    }
    if "instance" in meta and "host_id" in meta:
        return str(meta["instance"]), str(meta["host_id"])
    rows = conn.execute(
        "SELECT instance, host_id FROM orchestration_edges GROUP BY 1, 2 ORDER BY count(*) DESC, 1, 2 LIMIT 1"
    ).fetchall()
    return (str(rows[0][0]), str(rows[0][1])) if rows else None


def default_rebuilder(ctx: tuple[str, str] | None = None) -> Rebuilder:
    """``ingestd.ingest.rebuild.rebuild_projections`` with the live ``(instance, host_id)`` (the ingestion side's)."""
    from ingestd.core.touch import Ctx
    from ingestd.ingest.rebuild import rebuild_projections

    the_ctx = Ctx(instance=ctx[0], host_id=ctx[1]) if ctx is not None else Ctx()

    def run(src: apsw.Connection, dst: apsw.Connection, *, batch_size: int, origin_order: str) -> object:
        return rebuild_projections(src, dst, batch_size=batch_size, origin_order=origin_order, ctx=the_ctx)

    return run


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """Outcome of ``replay``.

    Attributes:
        comparison: Comparison of ``live``, ``replay_a``, ``replay_b``.
        log_rows: int, ``events_raw`` rows in the snapshot.
        receipts: int, prune receipts honoured.
        elapsed_s: dict[str, float], per phase (``snapshot``, ``rebuild_a``, ``rebuild_b``, ``compare``).
    """

    comparison: Comparison
    log_rows: int
    receipts: int
    elapsed_s: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        """JSON shape."""
        doc = self.comparison.to_json()
        doc.update(
            {
                "log_rows": self.log_rows,
                "receipts": self.receipts,
                "elapsed_s": {k: round(v, 3) for k, v in self.elapsed_s.items()},
            }
        )
        return doc


def replay(
    db_path: Path,
    *,
    rebuilder: Rebuilder | None = None,
    workdir: Path | None = None,
    batch_sizes: tuple[int, int] = (FIRST_BATCH_SIZE, SECOND_BATCH_SIZE),
    on_phase: Callable[[str], None] | None = None,
    on_rows: Callable[[int], None] | None = None,
) -> ReplayResult:
    """Double replay of ``db_path`` compared with its live projections. Reads the live db once (snapshot).

    Args:
        db_path: the live database (may be in use by the daemon).
        rebuilder: ``rebuild_projections``; default ``default_rebuilder()``.
        workdir: where the snapshot and the two rebuilds go (default a temp dir next to the database,
            removed afterwards).
        batch_sizes: the two rebuilds' batch sizes.
        on_phase: called with each phase's name as it starts (progress).
        on_rows: called with counts of rows dumped (progress).

    Raises:
        StorageError: a database could not be read or written.
    """
    import time

    tmp = Path(tempfile.mkdtemp(prefix=".ingestd-replay-", dir=workdir or db_path.parent))
    elapsed: dict[str, float] = {}
    opened: list[apsw.Connection] = []

    def phase(name: str) -> float:
        if on_phase is not None:
            on_phase(name)
        return time.monotonic()

    try:
        t = phase("snapshot")
        live_conn = connect(db_path)
        try:
            copy_database(live_conn, tmp / "snapshot.db")
        finally:
            live_conn.close()
        snap = apsw.Connection(str(tmp / "snapshot.db"), flags=apsw.SQLITE_OPEN_READONLY)
        opened.append(snap)
        elapsed["snapshot"] = time.monotonic() - t
        with storage_errors():
            log_rows = int(str(snap.execute("SELECT count(*) FROM events_raw").fetchall()[0][0]))
        recs = pr.receipts(snap)
        build = rebuilder if rebuilder is not None else default_rebuilder(live_ctx(snap))
        sides: list[tuple[str, apsw.Connection]] = [("live", snap)]
        for name, size, order in (("replay_a", batch_sizes[0], "origin"), ("replay_b", batch_sizes[1], "reverse")):
            t = phase(f"rebuild {name} (batch {size}, {order} origin order)")
            dst = _scratch_db(tmp / f"{name}.db")
            opened.append(dst)
            rebuild_into(snap, dst, build, batch_size=size, origin_order=order)
            sides.append((name, dst))
            elapsed[f"rebuild_{name[-1]}"] = time.monotonic() - t
        t = phase("compare")
        comparison = compare(sides, on_rows=on_rows)
        elapsed["compare"] = time.monotonic() - t
    except apsw.Error as e:
        raise translate(e) from e
    finally:
        for c in opened:
            with contextlib.suppress(apsw.Error):
                c.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return ReplayResult(comparison, log_rows, len(recs), elapsed)


def total_rows(db_path: Path) -> int:
    """Rows the comparison will read (progress total): 3 x the projection rows of the live db. Read-only."""
    try:
        conn = connect(db_path, readonly=True)
    except StorageError:
        return 0
    try:
        with storage_errors():
            n = 0
            for t, _ in TABLES:
                n += int(str(conn.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]))
            return 3 * n
    finally:
        conn.close()
