"""The log (``events_raw``): appending rows and reading a session's rows back (SPEC §3, DESIGN.md).

``payload_under_key``: the payload stored under one idempotency key (the receiver's check that a
client-keyed retry is the same event, SPEC §3; ``ingestd.http.hooks``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from ingestd.core.records import LogRow, NewLogRow
from ingestd.store.connection import Db
from ingestd.store.payload import decode, encode_rows
from ingestd.store.payload import decode as decode_payload
from ingestd.store.payload_blocks import PreBlocks

LOG_COLUMNS = "id, source, event_type, payload, received_at, session_id, origin, origin_gen, origin_offset, codec"

INSERT_LOG = (
    "INSERT INTO events_raw (idempotency_key, source, event_type, payload, received_at, session_id,"
    " origin, origin_gen, origin_offset, codec) VALUES (?,?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT (idempotency_key) DO NOTHING"
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
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        sql = f"SELECT {LOG_COLUMNS} FROM events_raw WHERE id IN ({', '.join('?' * len(chunk))})"
        for r in conn.execute(sql, tuple(chunk)):
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
    v: Any = conn.execute("SELECT max(id) FROM events_raw").fetchall()[0][0]
    return int(v) if v is not None else 0


def append(conn: Db, rows: Sequence[NewLogRow], pre: PreBlocks | None = None) -> tuple[dict[str, int], int]:
    """Insert log rows (existing keys skipped); return (key -> id of the inserted rows, rows inserted).

    Inside the write transaction nobody else appends, and SQLite gives each new row
    ``max(id) + 1``: when every row went in, the ids are the range past the old maximum in
    row order, so no ``RETURNING`` row has to come back per insert (a third of the insert's
    cost). When some keys already existed, the new rows are read back by id. ``pre``: the
    batch's blocks compressed ahead (``ingestd.store.payload.encode_rows``).
    """
    before = _max_log_id(conn)
    params = encode_rows(conn, rows, pre)
    changed = conn.total_changes()
    conn.executemany(INSERT_LOG, params)
    # events_raw has no insert trigger: the statement's changes are its rows inserted, each new
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
    none. Read-only (one lookup on the key's UNIQUE index; the receiver runs it on the writer's
    connection, ``HookWriter.call``).

    Raises:
        StorageError: the payload cannot be decoded (``payload.decode``).
    """
    for codec, blob in conn.execute("SELECT codec, payload FROM events_raw WHERE idempotency_key = ?", (key,)):
        return decode(conn, codec, blob)
    return None
