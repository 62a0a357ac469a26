"""The log (``events_raw``): appending rows and reading a session's rows back (SPEC §3, DESIGN.md).

The rows are stored in ``log_rows`` with their origin, session and kind (source, event type)
interned (``log_origins``, ``log_sessions``, ``log_kinds``; migration 0030) and the receipt time in
integer milliseconds (``received_ms``): a transcript line whose key is ``jsonl_key`` of its own origin,
generation and offset stores only the line's 8-byte check, every other row its key. Readers read
the view ``events_raw``, which gives every row's columns as they were appended, key included.

``payload_under_key``: the payload stored under one idempotency key (the receiver's check that a
client-keyed retry is the same event, SPEC §3; ``ingestd.http.hooks``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from ingestd.core.keys import origin_hash
from ingestd.core.records import LogRow, NewLogRow
from ingestd.store.connection import Db
from ingestd.store.payload import decode, encode_rows
from ingestd.store.payload import decode as decode_payload
from ingestd.store.sqlgen import in_parts

LOG_COLUMNS = "id, source, event_type, payload, received_at, session_id, origin, origin_gen, origin_offset, codec"

INSERT_LOG = (
    "INSERT INTO log_rows (key, line_check, kind, payload, received, sid, origin_id, origin_gen, origin_offset,"
    " codec) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING"
)

# Rows the database refused to project (isolated by ``ingestd.store.writer``) are never folded.
NOT_ISOLATED = " AND id NOT IN (SELECT raw_event_id FROM quarantine WHERE reason = 'storage')"


def row_from_db(conn: Db, r: Sequence[Any]) -> LogRow:
    """A ``LogRow`` from a ``SELECT {LOG_COLUMNS}`` row of ``conn`` (the payload decoded: the bytes as read)."""
    return LogRow(r[0], r[1], r[2], decode_payload(conn, r[9], r[3]), r[4], r[5], r[6], r[7], r[8])


def session_rows(conn: Db, sid: str, after_id: int = 0, before_id: int | None = None) -> list[LogRow]:
    """The session's log rows with ``after_id < id < before_id`` (no upper bound when None), by id,
    without the rows the database refused to project (``NOT_ISOLATED``). Read-only."""
    bound = " AND id < ?" if before_id is not None else ""
    args: tuple[Any, ...] = (sid, after_id) if before_id is None else (sid, after_id, before_id)
    return [
        row_from_db(conn, r)
        for r in conn.execute(
            f"SELECT {LOG_COLUMNS} FROM events_raw WHERE session_id = ? AND id > ?{bound}{NOT_ISOLATED} ORDER BY id",
            args,
        )
    ]


def rows_by_id(conn: Db, ids: Sequence[int]) -> dict[int, LogRow]:
    """The log rows with these ids (those that exist), by id. Read-only."""
    out: dict[int, LogRow] = {}
    for marks, part in in_parts(ids):
        for r in conn.execute(f"SELECT {LOG_COLUMNS} FROM events_raw WHERE id IN ({marks})", part):
            out[int(r[0])] = row_from_db(conn, r)
    return out


def quarantine_marker(row: NewLogRow, raw_event_id: int | None, detail: str) -> NewLogRow:
    """The ``quarantine`` log row (source ``ingestd``) recording that ``row`` was isolated.

    Its payload names the isolated row (``raw_event_id``; None when even the row could not be
    logged) and the database's refusal; the projector turns it into a ``storage`` quarantine row
    and the shell never folds the isolated row (``NOT_ISOLATED``), so a replay agrees.
    """
    payload = orjson.dumps(
        {"raw_event_id": raw_event_id, "key": row.idempotency_key, "reason": "storage", "detail": detail[:400]}
    )
    return NewLogRow(
        f"q:{row.idempotency_key}",
        "ingestd",
        "quarantine",
        payload,
        row.received_at,
        row.session_id,
        row.origin,
        row.origin_gen,
        row.origin_offset,
    )


def _max_log_id(conn: Db) -> int:
    v: Any = conn.execute("SELECT max(id) FROM log_rows").fetchall()[0][0]
    return int(v) if v is not None else 0


def _interned(
    conn: Db, table: str, columns: tuple[str, ...], values: Iterable[tuple[str, ...]]
) -> dict[tuple[str, ...], int]:
    """values -> the id of their row in ``table`` (``log_origins``, ``log_sessions``, ``log_kinds``),
    adding the values not there yet in the order given (in the caller's write transaction), so the
    same rows intern to the same ids in any process.

    Raises:
        apsw.ConstraintError: a value the table does not admit (``log_kinds``' CHECK on the source).
    """
    where = " AND ".join(f"{c} = ?" for c in columns)
    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    out: dict[tuple[str, ...], int] = {}
    for v in values:
        got: list[Any] = conn.execute(f"SELECT id FROM {table} WHERE {where}", v).fetchall()
        if got:
            out[v] = int(got[0][0])
            continue
        conn.execute(insert, v)
        out[v] = conn.last_insert_rowid()
    return out


def _origins(conn: Db, origins: Iterable[str]) -> dict[str, tuple[int, str]]:
    """origin -> (``log_origins.id``, its stored hash), adding the origins not there yet with
    ``origin_hash``, in the order given. The stored hash is the one the view ``events_raw`` rebuilds keys from, so a
    line's check is taken against it, never against a hash computed again."""
    out: dict[str, tuple[int, str]] = {}
    for o in origins:
        got: list[Any] = conn.execute("SELECT id, hash FROM log_origins WHERE origin = ?", (o,)).fetchall()
        if got:
            out[o] = (int(got[0][0]), str(got[0][1]))
            continue
        h = origin_hash(o)
        conn.execute("INSERT INTO log_origins (origin, hash) VALUES (?, ?)", (o, h))
        out[o] = (conn.last_insert_rowid(), h)
    return out


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def received_ms(at: str) -> int | str:
    """How ``log_rows.received`` keeps a receipt time: integer milliseconds since the epoch when
    ``at`` is canonical UTC (``YYYY-MM-DDTHH:MM:SS.mmmZ``, 1970 to 9999), which the view
    ``events_raw`` spells back exactly; any other text as it is. Pure."""
    if len(at) != 24 or at[19] != "." or at[23] != "Z" or not "1970" <= at[:4] <= "9999":
        return at
    ms = at[20:23]
    if not (ms.isascii() and ms.isdigit()):  # int() and isdigit() take any script's digits too
        return at
    try:
        dt = datetime.strptime(at[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return at
    if dt.strftime("%Y-%m-%dT%H:%M:%S") != at[:19]:
        return at
    return (dt - _EPOCH) // timedelta(seconds=1) * 1000 + int(ms)


def line_check(key: str, origin_hash_: str, gen: int, offset: int | None) -> bytes | None:
    """The 8 bytes a transcript line's row keeps instead of its key: the key's last 16 hex digits,
    when the key is exactly ``jsonl_key`` of this origin hash, generation and offset (so the view
    rebuilds it); None for any other key, kept as text. Pure."""
    if offset is None or not key.startswith("j:"):
        return None
    tail = key[-16:]
    if key != f"j:{origin_hash_}:{gen}:{offset:012x}:{tail}":
        return None
    try:
        check = bytes.fromhex(tail)
    except ValueError:
        return None
    return check if check.hex() == tail else None  # lowercase, no spaces: what the view spells


def _stored(conn: Db, params: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``encode_rows``'s parameters (key, source, event_type, payload, received_at, session_id,
    origin, origin_gen, origin_offset, codec) as ``log_rows`` parameters (``INSERT_LOG``)."""
    # first appearance order (dict keys), never a set's: a set of strings iterates in an order that
    # changes with each process's hash seed
    kinds = _interned(conn, "log_kinds", ("source", "event_type"), dict.fromkeys((p[1], p[2]) for p in params))
    origins = _origins(conn, dict.fromkeys(p[6] for p in params))
    named = dict.fromkeys((p[5],) for p in params if p[5] is not None)
    sessions = _interned(conn, "log_sessions", ("session_id",), named)
    times = {at: received_ms(at) for at in {p[4] for p in params}}
    out: list[tuple[Any, ...]] = []
    for key, source, event_type, payload, received_at, sid, origin, gen, offset, codec in params:
        oid, h = origins[origin]
        check = line_check(key, h, gen, offset)
        out.append(
            (
                None if check is not None else key,
                check,
                kinds[source, event_type],
                payload,
                times[received_at],
                sessions[(sid,)] if sid is not None else None,
                oid,
                gen,
                offset,
                codec,
            )
        )
    return out


def append(conn: Db, rows: Sequence[NewLogRow]) -> tuple[dict[str, int], int]:
    """Insert log rows (existing keys skipped); return (key -> id of the inserted rows, rows inserted).

    Inside the write transaction nobody else appends, and SQLite gives each new row
    ``max(id) + 1``: when every row went in, the ids are the range past the old maximum in
    row order, so no ``RETURNING`` row has to come back per insert (a third of the insert's
    cost). When some keys already existed, the new rows are read back by id.
    """
    before = _max_log_id(conn)
    params = _stored(conn, encode_rows(conn, rows))
    changed = conn.total_changes()
    conn.executemany(INSERT_LOG, params)
    # log_rows has no insert trigger: the statement's changes are its rows inserted, each new
    # row taking the next id (max + 1), so the new maximum is known without reading it back
    after = before + conn.total_changes() - changed
    if after - before == len(rows):
        return {r.idempotency_key: before + 1 + i for i, r in enumerate(rows)}, len(rows)
    got: dict[str, int] = {
        str(k): int(i) for i, k in conn.execute("SELECT id, idempotency_key FROM events_raw WHERE id > ?", (before,))
    }
    return got, after - before


def payload_under_key(conn: Db, key: str) -> bytes | None:
    """The bytes of the log row whose ``idempotency_key`` is ``key``, as read; None when there is
    none. A key stored as text (every key but a transcript line's: hooks, status line, OTLP, ...).
    Read-only (one lookup on the key's UNIQUE index; the receiver runs it on the writer's
    connection, ``HookWriter.call``).

    Raises:
        StorageError: the payload cannot be decoded (``payload.decode``).
    """
    for codec, blob in conn.execute("SELECT codec, payload FROM log_rows WHERE key = ?", (key,)):
        return decode(conn, codec, blob)
    return None
