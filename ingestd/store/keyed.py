"""The payload stored under one idempotency key (the receiver's check that a client-keyed
retry is the same event, SPEC §3; ``ingestd.http.hooks``)."""

from __future__ import annotations

from typing import Any

from ingestd.store.payload import decode


def payload_under_key(conn: Any, key: str) -> bytes | None:
    """The bytes of the log row whose ``idempotency_key`` is ``key``, as read; None when there is
    none. Read-only (one lookup on the key's UNIQUE index). Module level so the writer process
    can run it (``HookWriter.call`` pickles it).

    Raises:
        StorageError: the payload cannot be decoded (``payload.decode``).
    """
    for codec, blob in conn.execute("SELECT codec, payload FROM events_raw WHERE idempotency_key = ?", (key,)):
        return decode(conn, codec, blob)
    return None
