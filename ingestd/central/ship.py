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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors as pgerr

from ingestd.central import copies
from ingestd.central.migrate import migrate
from ingestd.central.pg import pg_errors
from ingestd.core.keys import ZERO_DIGEST, chain_digest
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
# A batch stops at this many payload bytes (as read) too, so a batch of large rows (pasted
# screenshots, 2 MiB each) stays within SPEC §11's 300 MB: rows stream from the local log into
# the COPY one at a time, and libpq sends as it goes.
DEFAULT_BATCH_BYTES = 32 << 20
# Appends to the central log take this transaction-scoped advisory lock, so central ids become
# visible in id order: a projector that has folded through id N never sees a row below N
# commit later (a concurrent ship of another host that took lower ids and committed after a
# higher one would otherwise be skipped for good). Only the COPY, the mark and the commit are
# serialised.
SHIP_LOCK = 0x696E6765_7374_03
EVIDENCE_KEY = "ship_evidence"  # meta: "<through>:<digest>" of this database's own keys
_LOCAL_COLUMNS = (
    "id, idempotency_key, source, event_type, payload, received_at, session_id, origin, origin_gen, origin_offset"
)
_DIRECT_COLUMNS = (
    "host_id, local_id, idempotency_key, source, event_type, payload, received_at, session_id, origin,"
    " origin_gen, origin_offset"
)
_TYPES = ("text", "int8", "text", "text", "text", "bytea", "text", "text", "text", "int4", "int8")
_COPY = f"COPY events_raw ({_DIRECT_COLUMNS}) FROM STDIN (FORMAT BINARY)"
_MARK = (
    "UPDATE hosts SET shipped_through = %s, shipped_key = %s, shipped_digest = %s,"
    " rows_shipped = rows_shipped + %s, log_as_of = GREATEST(log_as_of, %s),"
    " watchdog_window_s = COALESCE(%s, watchdog_window_s), last_shipped_at = now() WHERE host_id = %s"
)
_HOST = (
    "SELECT shipped_through, shipped_key, abandoned_through, abandoned_key, shipped_digest FROM hosts"
    " WHERE host_id = %s"
)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What shows that the store holds a local log up to a point: the running digest of the keys of
    its rows ``1..through`` in id order (``ingestd.core.keys.chain_digest``).

    Attributes:
        through: int, a local ``events_raw.id`` (0: none).
        digest: str, 32 hex digits.
    """

    through: int
    digest: str

    def to_meta(self) -> str:
        """The ``meta`` value: ``<through>:<digest>``."""
        return f"{self.through}:{self.digest}"

    @staticmethod
    def from_meta(value: object) -> Evidence | None:
        """``to_meta``'s value read back; None for anything else."""
        through, _, digest = str(value).partition(":")
        if through.isdigit() and len(digest) == 32 and all(c in "0123456789abcdef" for c in digest):
            return Evidence(int(through), digest)
        return None


NOTHING = Evidence(0, ZERO_DIGEST)


@dataclass(frozen=True, slots=True)
class Pending:
    """What a ship would send.

    Attributes:
        host_id: str, this machine's id.
        shipped_through: int, the central high-water mark (local ``events_raw.id``; 0: nothing yet).
        rows: int, local log rows a ship would go through (past the mark, or all of them when the
            log diverged from the store's: each checked, those the store lacks sent).
        payload_bytes: int, bytes of their payloads as read (what the store will hold; stored compressed here).
        first_id / last_id: int | None, the local id range.
        diverged: bool, this database's keys up to the mark are not the ones the store holds for
            this host (restored from a backup, replaced, or a copy): the whole log is gone through.
    """

    host_id: str
    shipped_through: int
    rows: int
    payload_bytes: int
    first_id: int | None
    last_id: int | None
    diverged: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON shape: every field by name."""
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class ShipResult:
    """What one ship run did.

    Attributes:
        host_id: str.
        sent: int, local rows gone through (past the mark).
        inserted: int, rows the central log did not have yet (``sent`` minus keys it had).
        batches: int, transactions committed.
        shipped_through: int, the high-water mark after the run.
        more: bool, the last batch was full (by rows or bytes): more is probably pending.
    """

    host_id: str
    sent: int
    inserted: int
    batches: int
    shipped_through: int
    more: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON shape: every field by name."""
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class Batch:
    """One committed batch: rows gone through, rows new to the store, the evidence after it, full."""

    sent: int
    inserted: int
    evidence: Evidence
    full: bool


def _host_row(pg: psycopg.Connection[Any], host_id: str, *, lock: bool) -> tuple[Any, ...] | None:
    """The host's marks (``_HOST``), None when the store or the host is new; ``lock``: FOR NO KEY UPDATE."""
    exists = pg.execute("SELECT to_regclass('hosts') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return None
    row = pg.execute(_HOST + (" FOR NO KEY UPDATE" if lock else ""), (host_id,)).fetchone()
    return tuple(row) if row is not None else None


def _keys(local: Db, after: int, through: int) -> Iterator[str]:
    """The keys of the local rows ``after < id <= through``, in id order."""
    with storage_errors():
        for (k,) in local.execute(
            "SELECT idempotency_key FROM events_raw WHERE id > ? AND id <= ? ORDER BY id", (after, through)
        ):
            yield str(k)


def local_evidence(local: Db, through: int, known: Evidence | None = None) -> Evidence:
    """This database's evidence at ``through``: ``known`` (its own, at or below ``through``) extended
    over its keys since, else computed from its first row. Read-only."""
    start = known if known is not None and known.through <= through else NOTHING
    return Evidence(through, chain_digest(start.digest, _keys(local, start.through, through)))


def known_evidence(local: Db) -> Evidence | None:
    """The evidence this database last recorded (``meta.ship_evidence``), None when none. Read-only."""
    with storage_errors():
        got = local.execute("SELECT value FROM meta WHERE key = ?", (EVIDENCE_KEY,)).fetchall()
    return Evidence.from_meta(got[0][0]) if got else None


@dataclass(frozen=True, slots=True)
class _Resume:
    """Where a batch starts: after ``start``; ``check``: the store may hold keys past it (look them up
    first); ``diverged``: the store's mark is not this database's log (``start`` is ``NOTHING``)."""

    start: Evidence
    check: bool
    diverged: bool


def _resume(
    local: Db, pg: psycopg.Connection[Any], host_id: str, row: tuple[Any, ...] | None, known: Evidence | None
) -> _Resume:
    """Decide where shipping resumes from the host's row (``_HOST``). Reads only.

    The store's mark is this database's own log only when this database's keys ``1..mark`` extend to
    the store's digest (a restore that reuses ids, or rows that took exactly the ids of lost ones,
    cannot give it). A mark shipped before digests were kept is checked once by the keys
    themselves (the key at the mark, and every local key up to it in the store).
    """
    if row is None or not row[0]:
        return _Resume(NOTHING, bool(row and row[2]), False)
    mark, key, abandoned, digest = int(row[0]), row[1], int(row[2] or 0), row[4]
    here = local_evidence(local, mark, known)
    if digest is None:
        same = _key_at(local, mark) == key and not missing_keys(local, pg, host_id, through=mark)
    else:
        same = here.digest == digest
    if same:
        return _Resume(here, mark < abandoned, False)
    return _Resume(NOTHING, True, True)


MAX_NAMED = 20  # local ids a check names; the counts cover all


@dataclass(frozen=True, slots=True)
class ShipCheck:
    """This host's local log against the store (``ship --verify``).

    Attributes:
        host_id: str.
        shipped_through: int, the store's mark for this host.
        local_rows / store_rows: int, log rows here / in the store under this host id.
        missing: int, local rows at or below the mark that the store does not hold (a fault: a
            ship skipped them), named by ``missing_ids`` (the first ``MAX_NAMED``).
        pending: int, local rows past the mark the store does not hold yet (the next ship sends them).
        store_only: int, rows the store holds under this host that this database does not (rows a
            restore from an older backup lost here; the store keeps them).
        evidence: str, ``same`` (this database's keys up to the mark give the store's digest),
            ``differs`` (they do not: the next ship goes through the whole log) or ``none`` (the
            store has no digest: nothing shipped, or shipped before digests were kept).
    """

    host_id: str
    shipped_through: int
    local_rows: int
    store_rows: int
    missing: int
    missing_ids: list[int]
    pending: int
    store_only: int
    evidence: str

    @property
    def ok(self) -> bool:
        """Nothing missing below the mark, and the evidence is not another log's."""
        return self.missing == 0 and self.evidence != "differs"

    def to_json(self) -> dict[str, Any]:
        """JSON shape: every field by name, and ``ok``."""
        return {**dataclasses.asdict(self), "ok": self.ok}


def _compare(local: Db, pg: psycopg.Connection[Any], host_id: str) -> Iterator[tuple[int | None, str | None]]:
    """Every key of either side once, in key order: ``(local id, None)`` for a local key the store
    lacks, ``(None, key)`` for a key only the store holds, ``(id, key)`` for both. Streams both
    sides (a server-side cursor; memory does not grow with the log). Read-only."""
    cur = local.cursor()
    try:
        mine = iter(cur.execute("SELECT idempotency_key, id FROM events_raw ORDER BY idempotency_key"))
        with pg.transaction(), pg.cursor(name="ingestd_ship_compare") as pc:
            pc.itersize = 10_000
            pc.execute("SELECT idempotency_key FROM events_raw WHERE host_id = %s ORDER BY idempotency_key", (host_id,))
            theirs = iter(pc)
            a = next(mine, None)
            b = next(theirs, None)
            while a is not None or b is not None:
                if b is None or (a is not None and str(a[0]) < str(b[0])):
                    assert a is not None
                    yield int(a[1]), None
                    a = next(mine, None)
                elif a is None or str(b[0]) < str(a[0]):
                    yield None, str(b[0])
                    b = next(theirs, None)
                else:
                    yield int(a[1]), str(b[0])
                    a, b = next(mine, None), next(theirs, None)
    finally:
        cur.close()


def missing_keys(local: Db, pg: psycopg.Connection[Any], host_id: str, *, through: int) -> list[int]:
    """The local ids ``<= through`` whose keys the store does not hold for ``host_id``, ascending. Read-only."""
    with storage_errors():
        return sorted(i for i, k in _compare(local, pg, host_id) if k is None and i is not None and i <= through)


def verify_shipped(local: Db, pg: psycopg.Connection[Any]) -> ShipCheck:
    """Compare this database's log with what the store holds for its host, key by key. Read-only.

    Raises:
        StorageError: either database refused.
    """
    host_id = host_id_of(local)
    with pg_errors():
        row = _host_row(pg, host_id, lock=False)
        mark = int(row[0]) if row else 0
        local_rows = store_rows = pending_rows = store_only = missing = 0
        named: list[int] = []
        with storage_errors():
            for i, k in _compare(local, pg, host_id):
                if i is not None:
                    local_rows += 1
                if k is not None:
                    store_rows += 1
                if i is None:
                    store_only += 1
                elif k is None and i > mark:
                    pending_rows += 1
                elif k is None:
                    missing += 1
                    named.append(i)
        evidence = "none"
        if row is not None and row[4] is not None:
            same = local_evidence(local, mark, known_evidence(local)).digest == row[4]
            evidence = "same" if same else "differs"
    pg.rollback()
    named.sort()
    return ShipCheck(
        host_id, mark, local_rows, store_rows, missing, named[:MAX_NAMED], pending_rows, store_only, evidence
    )


def _key_at(local: Db, local_id: int) -> str | None:
    with storage_errors():
        got = local.execute("SELECT idempotency_key FROM events_raw WHERE id = ?", (local_id,)).fetchall()
    return str(got[0][0]) if got else None


def pending(local: Db, pg: psycopg.Connection[Any], *, sizes: bool = True) -> Pending:
    """What ``ship`` would send now (``--dry-run``). Writes nothing to the store.

    Args:
        sizes: also add up the payload bytes (reads every pending row; ``payload_bytes`` is 0 without).

    Reads ``local`` only (a read-only connection will do): a database that never shipped is
    described under the host id its first ship will store.
    """
    host_id = host_id_of(local)
    with pg_errors():
        row = _host_row(pg, host_id, lock=False)
        resume = _resume(local, pg, host_id, row, known_evidence(local))
    pg.rollback()
    after = resume.start.through
    with storage_errors():
        got: Any = local.execute("SELECT count(*), min(id), max(id) FROM events_raw WHERE id > ?", (after,)).fetchall()
        n, lo, hi = got[0]
        size = 0
        if sizes and n:
            # the bytes as read (what the store will hold), not as stored here
            for codec, stored in local.execute("SELECT codec, payload FROM events_raw WHERE id > ?", (after,)):
                size += payload_size(local, codec, stored)
    return Pending(host_id, int(row[0]) if row else 0, int(n), size, lo, hi, resume.diverged)


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


def _record_local(local: Db, ev: Evidence) -> None:
    """Keep the central mark in ``meta.shipped_through`` (only ever moves forward: ``prune`` reads it)
    and the evidence at it (``meta.ship_evidence``, the latest: the next ship extends it)."""

    def body(c: Db) -> None:
        c.execute(
            "INSERT INTO meta (key, value) VALUES ('shipped_through', ?) ON CONFLICT (key) DO UPDATE SET"
            " value = CAST(max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER)) AS TEXT)",
            (str(ev.through),),
        )
        c.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (EVIDENCE_KEY, ev.to_meta()),
        )

    write_txn(local, body)


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


@dataclass(slots=True)
class _Copied:
    """What one COPY pass wrote: rows written, the last local id gone through, newest receipt, window."""

    written: int = 0
    last: int = 0
    as_of: str = ""
    window: int | None = None
    full_bytes: bool = False


def _copy(
    local: Db, pg: psycopg.Connection[Any], host_id: str, after: int, through: int, batch_bytes: int, skip: set[str]
) -> _Copied:
    """COPY the local rows ``after < id <= through`` (binary, payloads decoded one at a time) into the
    central log, leaving out keys in ``skip``; stops once ``batch_bytes`` of payload went (after at
    least one row)."""
    out = _Copied(last=after)
    size = 0
    cur = local.cursor()
    try:
        with storage_errors(), pg.cursor() as pc, pc.copy(_COPY) as cp:
            cp.set_types(list(_TYPES))
            for r in cur.execute(
                f"SELECT {_LOCAL_COLUMNS}, codec FROM events_raw WHERE id > ? AND id <= ? ORDER BY id", (after, through)
            ):
                if size >= batch_bytes and out.last > after:
                    out.full_bytes = True
                    break
                out.last = int(r[0])
                if r[5] > out.as_of:
                    out.as_of = r[5]
                if r[1] in skip:
                    continue
                payload = decode_payload(local, r[10], r[4])
                if r[2] == "ingestd" and r[3] == "watchdog":
                    out.window = window_of(payload) or out.window
                size += len(payload)
                cp.write_row((host_id, *_shippable(r, payload)))
                out.written += 1
    finally:
        cur.close()
    return out


def present_keys(pg: psycopg.Connection[Any], host_id: str, keys: list[str]) -> set[str]:
    """Which of ``keys`` the store holds for ``host_id``. Read-only."""
    got = pg.execute(
        "SELECT idempotency_key FROM events_raw WHERE host_id = %s AND idempotency_key = ANY(%s)", (host_id, keys)
    )
    return {str(r[0]) for r in got}


def ship_batch(
    local: Db,
    pg: psycopg.Connection[Any],
    host_id: str,
    batch_rows: int,
    *,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    known: Evidence | None = None,
) -> Batch:
    """Ship the next batch in one store transaction.

    Under the host's row lock: where to resume (``_resume``: the store's mark when this database's
    evidence there is the store's, else from the first row, recording the divergence with
    ``copies.diverged``), then at most ``batch_rows`` rows and ``batch_bytes`` of payload past it,
    streamed into one COPY; keys the store holds already (a divergence, or a key the COPY met) are
    looked up and left out. The mark, its key and its evidence move in the same transaction.

    Args:
        known: this database's evidence at or below the mark (the previous batch's, or
            ``meta.ship_evidence``), so only the keys since are read to check the store's.

    Returns:
        ``Batch``; ``sent == 0`` when nothing was pending.

    Raises:
        copies.SecondCopy: another copy of this database ships as its host.
        StorageError: the store refused (the transaction rolled back: rows and mark as before).
    """
    with pg_errors(), pg.transaction():
        row = _host_row(pg, host_id, lock=True)
        resume = _resume(local, pg, host_id, row, known)
        if resume.diverged and row is not None:
            # Unless it is the copy the store left behind (``copies.diverged`` raises), this database
            # was restored from a backup or replaced: its whole log is gone through again, each key
            # the store lacks sent.
            copies.diverged(pg, host_id, row, _key_at(local, int(row[2])) if row[2] else None, local.filename)
            log.warning("ship_log_diverged", host_id=host_id, mark=int(row[0]))
        start = resume.start
        with storage_errors():
            ids = [
                (int(i), str(k))
                for i, k in local.execute(
                    "SELECT id, idempotency_key FROM events_raw WHERE id > ? ORDER BY id LIMIT ?",
                    (start.through, batch_rows),
                )
            ]
        if not ids:
            if row is not None and (row[4] != start.digest or int(row[0]) != start.through):
                # the evidence a mark shipped before digests gets once checked, or a divergence's reset
                key = _key_at(local, start.through) if start.through else None
                pg.execute(_MARK, (start.through, key, start.digest, 0, None, None, host_id))
            return Batch(0, 0, start, False)
        keys = [k for _, k in ids]
        skip = present_keys(pg, host_id, keys) if resume.check else set()
        pg.execute("SELECT pg_advisory_xact_lock(%s)", (SHIP_LOCK,))
        through = ids[-1][0]
        try:
            with pg.transaction():
                done = _copy(local, pg, host_id, start.through, through, batch_bytes, skip)
        except pgerr.UniqueViolation:
            # a key the store holds past the mark (shipped under a mark a restore took back): look
            # up the batch's keys and copy the others
            done = _copy(local, pg, host_id, start.through, through, batch_bytes, present_keys(pg, host_id, keys))
        gone = [k for (i, k) in ids if i <= done.last]
        ev = Evidence(done.last, chain_digest(start.digest, gone))
        pg.execute(_MARK, (done.last, gone[-1], ev.digest, done.written, done.as_of or None, done.window, host_id))
    return Batch(len(gone), done.written, ev, done.full_bytes or len(ids) == batch_rows)


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
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    on_batch: Callable[[int], None] | None = None,
    max_batches: int | None = None,
    prepared: Ctx | None = None,
) -> ShipResult:
    """Ship every local log row the store lacks past the host's mark, one transaction per batch.

    Args:
        local: the local database (migrated); read, plus ``meta`` keys written.
        pg: a central store connection (not autocommit); migrated here when behind.
        batch_rows: int, rows per transaction.
        batch_bytes: int, payload bytes (as read) per transaction, at least one row.
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
    if batch_rows < 1 or batch_bytes < 1:
        raise ConfigError("ship batches must be at least 1 row and 1 byte")
    ident = prepared if prepared is not None else prepare(local, pg)
    # each batch must be a transaction of its own, not a savepoint inside one a read left open
    pg.rollback()
    sent = inserted = batches = 0
    known = known_evidence(local)
    full = False
    while max_batches is None or batches < max_batches:
        try:
            got = ship_batch(local, pg, ident.host_id, batch_rows, batch_bytes=batch_bytes, known=known)
        except copies.SecondCopy:
            copies.refused(local, pg, ident.host_id)
            raise
        if got.evidence != known:
            _record_local(local, got.evidence)
            known = got.evidence
        full = got.full
        if got.sent == 0:
            break
        sent += got.sent
        inserted += got.inserted
        batches += 1
        if on_batch is not None:
            on_batch(got.sent)
        if not got.full:
            break
    through = known.through if known is not None else 0
    return ShipResult(ident.host_id, sent, inserted, batches, through, full)


class Shipper:
    """The daemon's shipping pass (setting ``ship_to``): its own connections, kept between passes.

    A store that is unreachable or refuses only fails that pass (logged by the caller); the
    store connection is dropped and opened again on the next pass, and the watermark makes the
    retry exact. The store is migrated and this host registered once per store connection
    (``prepare``), not on every pass.
    """

    def __init__(
        self,
        db_path: str,
        url: str,
        *,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        max_batches: int = 10,
    ) -> None:
        self.db_path = db_path
        self.url = url
        self.batch_rows = batch_rows
        self.batch_bytes = batch_bytes
        self.max_batches = max_batches
        self._local: Db | None = None
        self._pg: psycopg.Connection[Any] | None = None
        self._ident: Ctx | None = None  # ``prepare``d on the current store connection

    def run_once(self) -> ShipResult:
        """Ship up to ``max_batches`` batches. Blocking (run it off the event loop).

        Returns:
            ``ShipResult``; ``more``: more is probably pending.

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
                self._local,
                self._pg,
                batch_rows=self.batch_rows,
                batch_bytes=self.batch_bytes,
                max_batches=self.max_batches,
                prepared=self._ident,
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
