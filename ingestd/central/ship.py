"""``ingestd ship``: copy the local log into the central store, append-only and exactly once (SPEC §13).

Each batch is one PostgreSQL transaction: lock the host's row, COPY the next local ``events_raw``
rows (by local id, past the host's high-water mark) into the central ``events_raw``, keyed by
``(host_id, idempotency_key)`` (a key already there sends the batch through a staging table and
``ON CONFLICT DO NOTHING`` instead), and move the mark (``hosts.shipped_through``) to the batch's
last local id. Rows and mark commit together, so a ship killed at any point (mid-COPY included)
left either the whole batch and its mark or neither: the next run resumes exactly, nothing lost
and nothing doubled. After each commit the local database records the mark too
(``meta.shipped_through``): ``prune`` reads it to keep what has not travelled yet (it may lag the
central mark, never lead it).

Payloads travel as the exact bytes (``bytea``); the log's event type, session and origin in their
``storable`` form (``ingestd.core.storable``), which the log writes already, so a value SQLite
took and PostgreSQL's ``text`` cannot (a U+0000 an older ingestd logged) never stops a host.

A machine is known by ``meta.host_id`` (``ingestd.store.identity``, created once) and its
``meta.instance``: a second database claiming a host id the store already has for another
instance is refused (two machines with the same host name), rather than mixing two logs; one
database copied to two machines is told apart by its log (``ingestd.central.copies``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors as pgerr

from ingestd.central import copies
from ingestd.central.migrate import migrate
from ingestd.central.pg import pg_errors
from ingestd.core.storable import storable
from ingestd.core.touch import Ctx
from ingestd.core.watchdog import window_of
from ingestd.errors import ConfigError
from ingestd.logs import get_logger
from ingestd.store.connection import Db, storage_errors, write_txn
from ingestd.store.identity import database_identity, host_id_of
from ingestd.store.payload import decode as decode_payload
from ingestd.store.payload import size_of as payload_size

log = get_logger("ingestd.central.ship")

DEFAULT_BATCH_ROWS = 20_000
# Appends to the central log take this transaction-scoped advisory lock, so central ids become
# visible in id order: a projector that has folded through id N never sees a row below N
# commit later (a concurrent ship of another host that took lower ids and committed after a
# higher one would otherwise be skipped for good). The COPY into staging runs before it, in
# parallel; only the INSERT, the mark and the commit are serialised.
SHIP_LOCK = 0x696E6765_7374_03
_LOCAL_COLUMNS = (
    "id, idempotency_key, source, event_type, payload, received_at, session_id, origin, origin_gen, origin_offset"
)
_STAGE = (
    "CREATE TEMP TABLE IF NOT EXISTS ship_stage (local_id bigint, idempotency_key text, source text,"
    " event_type text, payload bytea, received_at text, session_id text, origin text, origin_gen integer,"
    " origin_offset bigint) ON COMMIT DELETE ROWS;"
    " ALTER TABLE ship_stage ALTER COLUMN payload SET STORAGE EXTERNAL"
)
_DIRECT_COLUMNS = (
    "host_id, local_id, idempotency_key, source, event_type, payload, received_at, session_id, origin,"
    " origin_gen, origin_offset"
)
_STAGE_TYPES = ("int8", "text", "text", "text", "bytea", "text", "text", "text", "int4", "int8")
_APPEND = (
    "INSERT INTO events_raw (host_id, local_id, idempotency_key, source, event_type, payload, received_at,"
    " session_id, origin, origin_gen, origin_offset)"
    " SELECT %s, local_id, idempotency_key, source, event_type, payload, received_at, session_id, origin,"
    " origin_gen, origin_offset FROM ship_stage ORDER BY local_id"
    " ON CONFLICT (host_id, idempotency_key) DO NOTHING"
)
_MARK = (
    "UPDATE hosts SET shipped_through = %s, shipped_key = %s, rows_shipped = rows_shipped + %s,"
    " log_as_of = GREATEST(log_as_of, %s), watchdog_window_s = COALESCE(%s, watchdog_window_s),"
    " last_shipped_at = now() WHERE host_id = %s"
)


@dataclass(frozen=True, slots=True)
class Pending:
    """What a ship would send.

    Attributes:
        host_id: str, this machine's id.
        shipped_through: int, the central high-water mark (local ``events_raw.id``; 0: nothing yet).
        rows: int, local log rows past the mark.
        payload_bytes: int, bytes of their payloads as read (what the store will hold; stored compressed here).
        first_id / last_id: int | None, the local id range.
    """

    host_id: str
    shipped_through: int
    rows: int
    payload_bytes: int
    first_id: int | None
    last_id: int | None

    def to_json(self) -> dict[str, Any]:
        """JSON shape: every field by name."""
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class ShipResult:
    """What one ship run did.

    Attributes:
        host_id: str.
        sent: int, rows copied to the store.
        inserted: int, rows the central log did not have yet (``sent`` minus keys it had).
        batches: int, transactions committed.
        shipped_through: int, the high-water mark after the run.
    """

    host_id: str
    sent: int
    inserted: int
    batches: int
    shipped_through: int

    def to_json(self) -> dict[str, Any]:
        """JSON shape: every field by name."""
        return dataclasses.asdict(self)


def _central_mark(pg: psycopg.Connection[Any], host_id: str) -> int:
    """The host's high-water mark in the store, 0 when the store or the host is new. Read-only."""
    with pg_errors():
        exists = pg.execute("SELECT to_regclass('hosts') IS NOT NULL").fetchone()
        if not exists or not exists[0]:
            return 0
        row = pg.execute("SELECT shipped_through FROM hosts WHERE host_id = %s", (host_id,)).fetchone()
    return int(row[0]) if row else 0


def pending(local: Db, pg: psycopg.Connection[Any], *, sizes: bool = True) -> Pending:
    """What ``ship`` would send now (``--dry-run``). Writes nothing to the store.

    Args:
        sizes: also add up the payload bytes (reads every pending row; ``payload_bytes`` is 0 without).

    Reads ``local`` only (a read-only connection will do): a database that never shipped is
    described under the host id its first ship will store.
    """
    host_id = host_id_of(local)
    mark = _central_mark(pg, host_id)
    pg.rollback()
    with storage_errors():
        got: Any = local.execute("SELECT count(*), min(id), max(id) FROM events_raw WHERE id > ?", (mark,)).fetchall()[
            0
        ]
        n, lo, hi = got
        size = 0
        if sizes and n:
            # the bytes as read (what the store will hold), not as stored here
            for codec, stored in local.execute("SELECT codec, payload FROM events_raw WHERE id > ?", (mark,)):
                size += payload_size(local, codec, stored)
    return Pending(host_id, mark, int(n), size, lo, hi)


def _register(pg: psycopg.Connection[Any], ident: Ctx) -> None:
    with pg_errors(), pg.transaction():
        pg.execute(
            "INSERT INTO hosts (host_id, instance) VALUES (%s, %s) ON CONFLICT (host_id) DO NOTHING",
            (ident.host_id, ident.instance),
        )
        row = pg.execute("SELECT instance FROM hosts WHERE host_id = %s", (ident.host_id,)).fetchone()
    if row is None or row[0] != ident.instance:
        raise ConfigError(
            f"the central store already has host id {ident.host_id!r} for another ingestd database "
            f"(instance {row[0] if row else '?'}, this one is {ident.instance}): two machines share a host "
            "name; give this one its own host id: `ingestd ship --set-host-id NAME` (with its daemon stopped)",
            host_id=ident.host_id,
        )


def _record_local(local: Db, mark: int) -> None:
    """Keep the central mark in ``meta.shipped_through`` (only ever moves forward)."""
    write_txn(
        local,
        lambda c: c.execute(
            "INSERT INTO meta (key, value) VALUES ('shipped_through', ?) ON CONFLICT (key) DO UPDATE SET"
            " value = CAST(max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER)) AS TEXT)",
            (str(mark),),
        ),
    )


def _payload(v: Any) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode("utf-8", "surrogatepass")


def _shippable(r: Any, payload: bytes) -> tuple[Any, ...]:
    """A local log row (``_LOCAL_COLUMNS``) as the store takes it: its payload ``payload`` (the bytes
    as read), its event type, session and origin in their ``storable`` form. The log writes these
    columns storable already; an older ingestd's rows may hold a U+0000, which PostgreSQL's text
    refuses (the origin keeps its length: only a hash index holds it whole)."""
    sid = r[6]
    return (
        r[0],
        r[1],
        r[2],
        storable(r[3]),
        payload,
        r[5],
        None if sid is None else storable(sid),
        storable(r[7], limit=None),
        r[8],
        r[9],
    )


def _copy(pg: psycopg.Connection[Any], sql: str, rows: list[Any], host_id: str | None) -> None:
    """COPY local log rows (binary), with ``host_id`` first when given."""
    with pg.cursor() as cur, cur.copy(sql) as cp:
        if host_id is None:
            cp.set_types(list(_STAGE_TYPES))
            for r in rows:
                cp.write_row((r[0], r[1], r[2], r[3], _payload(r[4]), r[5], r[6], r[7], r[8], r[9]))
        else:
            cp.set_types(["text", *_STAGE_TYPES])
            for r in rows:
                cp.write_row((host_id, r[0], r[1], r[2], r[3], _payload(r[4]), r[5], r[6], r[7], r[8], r[9]))


def _key_at(local: Db, local_id: int) -> str | None:
    with storage_errors():
        got = local.execute("SELECT idempotency_key FROM events_raw WHERE id = ?", (local_id,)).fetchall()
    return str(got[0][0]) if got else None


def ship_batch(local: Db, pg: psycopg.Connection[Any], host_id: str, batch_rows: int) -> tuple[int, int, int]:
    """Ship the next batch in one store transaction.

    Returns:
        ``(rows sent, rows inserted, mark after)``; ``(0, 0, mark)`` when nothing was pending.

    Raises:
        StorageError: the store refused (the transaction rolled back: rows and mark as before).
    """
    with pg_errors(), pg.transaction():
        row = pg.execute(
            "SELECT shipped_through, shipped_key, abandoned_through, abandoned_key FROM hosts"
            " WHERE host_id = %s FOR NO KEY UPDATE",
            (host_id,),
        ).fetchone()
        mark = int(row[0]) if row else 0
        if mark and row is not None and _key_at(local, mark) != row[1]:
            # The local log no longer has the shipped row at the mark: the database was restored
            # from a backup (or replaced, or copied) and reuses ids. Ship it all again; keys the
            # store has are skipped (staging and ON CONFLICT), rows it lacks go in. Unless it is
            # the copy the store left behind (``copies.diverged`` raises).
            copies.diverged(pg, host_id, row, _key_at(local, int(row[2])) if row[2] else None, local.filename)
            log.warning("ship_log_diverged", host_id=host_id, mark=mark)
            mark = 0
        with storage_errors():
            # the store keeps the exact bytes (SPEC §3): payloads are shipped decoded
            rows: list[Any] = [
                _shippable(r, decode_payload(local, r[10], r[4]))
                for r in local.execute(
                    f"SELECT {_LOCAL_COLUMNS}, codec FROM events_raw WHERE id > ? ORDER BY id LIMIT ?",
                    (mark, batch_rows),
                )
            ]
        if not rows:
            return 0, 0, mark
        as_of = ""
        window: int | None = None
        for r in rows:
            if r[5] > as_of:
                as_of = r[5]
            if r[2] == "ingestd" and r[3] == "watchdog":
                window = window_of(_payload(r[4])) or window
        pg.execute("SELECT pg_advisory_xact_lock(%s)", (SHIP_LOCK,))
        try:
            # Past the mark the store has none of these rows (the mark moves with them), so they
            # are copied straight into the log; a key it has after all (a local database restored
            # from an older backup reuses ids) refuses the COPY, and the batch goes through
            # staging and ON CONFLICT DO NOTHING instead.
            with pg.transaction():
                _copy(pg, f"COPY events_raw ({_DIRECT_COLUMNS}) FROM STDIN (FORMAT BINARY)", rows, host_id)
            inserted = len(rows)
        except pgerr.UniqueViolation:
            pg.execute(_STAGE)
            _copy(pg, "COPY ship_stage FROM STDIN (FORMAT BINARY)", rows, None)
            inserted = pg.execute(_APPEND, (host_id,)).rowcount
        last = int(rows[-1][0])
        pg.execute(_MARK, (last, rows[-1][1], inserted, as_of or None, window, host_id))
    return len(rows), inserted, last


def prepare(local: Db, pg: psycopg.Connection[Any]) -> Ctx:
    """Once per store connection before shipping: migrate the store when behind, register this host.

    Returns:
        This database's identity (``meta.host_id``, ``meta.instance``).

    Raises:
        ConfigError: the host id belongs to another database in the store.
        MigrationError: the central ledger refuses.
        StorageError: either database refused.
    """
    ident = database_identity(local)
    migrate(pg)
    _register(pg, ident)
    return ident


def ship(
    local: Db,
    pg: psycopg.Connection[Any],
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    on_batch: Callable[[int], None] | None = None,
    max_batches: int | None = None,
    prepared: Ctx | None = None,
) -> ShipResult:
    """Ship every local log row past the host's mark, one transaction per batch.

    Args:
        local: the local database (migrated); read, plus ``meta`` keys written.
        pg: a central store connection (not autocommit); migrated here when behind.
        batch_rows: int, rows per transaction.
        on_batch: called with the rows of each committed batch (progress).
        max_batches: stop after this many batches (the daemon ships a bounded slice per pass).
        prepared: the identity ``prepare`` returned for this ``pg`` connection (the daemon's
            ``Shipper`` prepares once per connection); None: ``prepare`` runs first.

    Returns:
        ``ShipResult``.

    Raises:
        ConfigError: the host id belongs to another database in the store.
        copies.SecondCopy: another copy of this database ships as its host (recorded in both databases).
        MigrationError: the central ledger refuses.
        StorageError: either database refused; committed batches stay, with their mark.
    """
    if batch_rows < 1:
        raise ConfigError("ship batch size must be at least 1 row")
    ident = prepared if prepared is not None else prepare(local, pg)
    sent = inserted = batches = 0
    mark = _central_mark(pg, ident.host_id)
    pg.rollback()
    while max_batches is None or batches < max_batches:
        try:
            n, k, mark = ship_batch(local, pg, ident.host_id, batch_rows)
        except copies.SecondCopy:
            copies.refused(local, pg, ident.host_id)
            raise
        if n == 0:
            break
        sent += n
        inserted += k
        batches += 1
        _record_local(local, mark)
        if on_batch is not None:
            on_batch(n)
        if n < batch_rows:
            break
    if batches == 0 and mark:
        _record_local(local, mark)
    return ShipResult(ident.host_id, sent, inserted, batches, mark)


class Shipper:
    """The daemon's shipping pass (setting ``ship_to``): its own connections, kept between passes.

    A store that is unreachable or refuses only fails that pass (logged by the caller); the
    store connection is dropped and opened again on the next pass, and the watermark makes the
    retry exact. The store is migrated and this host registered once per store connection
    (``prepare``), not on every pass.
    """

    def __init__(self, db_path: str, url: str, *, batch_rows: int = DEFAULT_BATCH_ROWS, max_batches: int = 10) -> None:
        self.db_path = db_path
        self.url = url
        self.batch_rows = batch_rows
        self.max_batches = max_batches
        self._local: Db | None = None
        self._pg: psycopg.Connection[Any] | None = None
        self._ident: Ctx | None = None  # ``prepare``d on the current store connection

    def run_once(self) -> ShipResult:
        """Ship up to ``max_batches`` batches. Blocking (run it off the event loop).

        Returns:
            ``ShipResult``; ``sent == max_batches * batch_rows`` means more is probably pending.

        Raises:
            IngestdError: the pass failed (nothing of an unfinished batch is in the store).
        """
        from ingestd.central.pg import connect as pg_connect
        from ingestd.store.connection import connect

        if self._local is None:
            self._local = connect(self.db_path)
        if self._pg is None:
            self._pg = pg_connect(self.url)
        try:
            if self._ident is None:
                self._ident = prepare(self._local, self._pg)
            return ship(
                self._local, self._pg, batch_rows=self.batch_rows, max_batches=self.max_batches, prepared=self._ident
            )
        except BaseException:
            self._pg.close()
            self._pg = None
            self._ident = None
            raise

    def close(self) -> None:
        """Close both connections."""
        if self._pg is not None:
            self._pg.close()
            self._pg = None
        if self._local is not None:
            self._local.close()
            self._local = None
