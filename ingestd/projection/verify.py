"""``ingestd verify``: integrity checks on a live database (SPEC §9, §12).

Each check returns a ``Check`` (name, ok, details); none changes data. The
append-only probe attempts an UPDATE and a DELETE on one log row inside a
transaction that is always rolled back, and expects the triggers' abort; on an
empty log it probes a row inserted in that same rolled-back transaction.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import apsw

from ingestd.core.revision import PROJECTION_REVISION
from ingestd.errors import StorageError
from ingestd.projection.reproject import stale_projection
from ingestd.store import migrate as mig
from ingestd.store import payload_blocks as blocks
from ingestd.store import payload_open as opened
from ingestd.store import pruned, rollup
from ingestd.store.connection import Db, translate
from ingestd.store.payload import decode as decode_payload
from ingestd.store.pricing import MAX_USD_PER_MTOK

MAX_DETAILS = 20
# name -> (table, timing and verb, word in its message). The log is the view events_raw over
# log_rows and the interned origins, sessions and kinds it names (migration 0030); payload_codecs holds
# the dictionaries compressed log rows need to be read (0013) and payload_blocks the blocks of
# lines blocked rows refer to (0016), and payload_sealed where an open block's lines went (0019),
# so all are append-only as the log.
TRIGGERS = {
    "events_raw_no_update": ("events_raw", "INSTEAD OF UPDATE", "append-only"),
    "events_raw_no_delete": ("events_raw", "INSTEAD OF DELETE", "append-only"),
    "log_rows_no_update": ("log_rows", "BEFORE UPDATE", "append-only"),
    "log_rows_no_delete": ("log_rows", "BEFORE DELETE", "append-only"),
    "log_origins_no_update": ("log_origins", "BEFORE UPDATE", "append-only"),
    "log_origins_no_delete": ("log_origins", "BEFORE DELETE", "append-only"),
    "log_kinds_no_update": ("log_kinds", "BEFORE UPDATE", "append-only"),
    "log_kinds_no_delete": ("log_kinds", "BEFORE DELETE", "append-only"),
    "log_sessions_no_update": ("log_sessions", "BEFORE UPDATE", "append-only"),
    "log_sessions_no_delete": ("log_sessions", "BEFORE DELETE", "append-only"),
    "payload_codecs_no_update": ("payload_codecs", "BEFORE UPDATE", "append-only"),
    "payload_codecs_no_delete": ("payload_codecs", "BEFORE DELETE", "append-only"),
    "payload_blocks_no_update": ("payload_blocks", "BEFORE UPDATE", "append-only"),
    "payload_blocks_no_delete": ("payload_blocks", "BEFORE DELETE", "append-only"),
    "payload_sealed_no_update": ("payload_sealed", "BEFORE UPDATE", "append-only"),
    "payload_sealed_no_delete": ("payload_sealed", "BEFORE DELETE", "append-only"),
}
# Message ids anywhere in a payload: assistant records carry message.id, agent_progress
# copies carry data.message.message.id (FORMATS.md §2). A byte scan finds both without parsing.
_ID_RE = re.compile(rb'"id"\s*:\s*"([^"\\]+)"')


@dataclass(frozen=True, slots=True)
class Check:
    """One verification result.

    Attributes:
        name: str, the check's name (``ledger``, ``append_only``, ``rollup``, ...).
        ok: bool.
        details: list[str], one line per failure found (at most ``MAX_DETAILS``), or what was checked.
    """

    name: str
    ok: bool
    details: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """JSON shape: ``{"name", "ok", "details"}``."""
        return {"name": self.name, "ok": self.ok, "details": list(self.details)}


def check_ledger(conn: Db) -> Check:
    """Migration files and recorded checksums match their pins; nothing pending. Read-only."""
    st = mig.status(conn)
    problems = list(st.problems)
    if st.pending:
        names = ", ".join(f"{p.stem}" for p in st.pending)
        problems.append(f"migrations pending: {names} (run `ingestd migrate`)")
    ok_detail = [f"{len(st.applied)} migrations applied, checksums match"]
    return Check("ledger", not problems, problems or ok_detail)


def _expect_abort(conn: Db, sql: str, params: tuple[object, ...], what: str) -> str | None:
    """Run ``sql`` inside a savepoint that is always rolled back; None when a trigger aborted it."""
    conn.execute("SAVEPOINT verify_probe")
    try:
        conn.execute(sql, params)
    except apsw.ConstraintError as e:
        if "append-only" in str(e):
            return None
        return f"{what} failed with an unexpected error: {e}"
    except apsw.SQLError as e:
        if "because it is a view" in str(e):  # a view without its INSTEAD OF trigger changes nothing
            return None
        raise
    finally:
        conn.execute("ROLLBACK TO verify_probe")
        conn.execute("RELEASE verify_probe")
    return f"{what} was NOT refused: the append-only trigger is missing or broken"


def _block_probes(conn: Db) -> list[tuple[str, tuple[object, ...], str]]:
    """The UPDATE and DELETE to refuse on ``payload_blocks`` (migration 0016) and ``payload_sealed``
    (0019), on probe rows inserted in the caller's transaction (rolled back); none for a table
    the database does not have."""
    if not blocks.has_table(conn):
        return []
    conn.execute("INSERT INTO payload_blocks (codec, data) VALUES (1, x'')")
    bid = conn.last_insert_rowid()
    probes: list[tuple[str, tuple[object, ...], str]] = [
        ("UPDATE payload_blocks SET data = data WHERE id = ?", (bid,), "UPDATE on payload_blocks"),
        ("DELETE FROM payload_blocks WHERE id = ?", (bid,), "DELETE on payload_blocks"),
    ]
    if opened.has_tables(conn):
        conn.execute("INSERT INTO payload_sealed (open_id, block_id, crc) VALUES (-1, ?, 0)", (bid,))
        probes += [
            ("UPDATE payload_sealed SET crc = crc WHERE open_id = -1", (), "UPDATE on payload_sealed"),
            ("DELETE FROM payload_sealed WHERE open_id = -1", (), "DELETE on payload_sealed"),
        ]
    return probes


def _session_probes(conn: Db) -> list[tuple[str, tuple[object, ...], str]]:
    """The UPDATE and DELETE to refuse on ``log_sessions``, on a probe row inserted in the caller's
    transaction (rolled back)."""
    conn.execute("INSERT INTO log_sessions (session_id) VALUES ('verify:probe:' || randomblob(8))")
    sid = conn.last_insert_rowid()
    return [
        ("UPDATE log_sessions SET session_id = session_id WHERE id = ?", (sid,), "UPDATE on log_sessions"),
        ("DELETE FROM log_sessions WHERE id = ?", (sid,), "DELETE on log_sessions"),
    ]


def check_append_only(conn: Db) -> Check:
    """The append-only triggers exist and abort an UPDATE and a DELETE. Changes nothing (always rolled back).

    The probes run in one ``BEGIN IMMEDIATE`` transaction: it waits (busy timeout) for a writer's
    transaction to end, where a deferred one that read first could not upgrade to a write after
    the daemon committed ("database is locked" at once, a false FAIL). A database this
    process cannot write (a read-only file) is checked for its triggers only, and says so.
    """
    problems: list[str] = []
    found = {
        r[0]: (r[1], r[2] or "")
        for r in conn.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")
    }
    for name, (table, verb, word) in TRIGGERS.items():
        if name not in found:
            problems.append(f"trigger {name} is missing")
            continue
        tbl, sql = found[name]
        if tbl != table or verb not in " ".join(sql.upper().split()) or word not in sql:
            problems.append(f"trigger {name} is not a {verb} abort on {table}: {sql!r}")
    if conn.readonly("main"):
        return Check(
            "append_only",
            not problems,
            problems or ["triggers present; UPDATE and DELETE not probed: the database file is read-only here"],
        )
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT id FROM events_raw ORDER BY id LIMIT 1").fetchall()
        probed = "the first log row"
        if not row:
            # Empty log: probe a row inserted in this transaction, rolled back below.
            conn.execute(
                "INSERT INTO events_raw (idempotency_key, source, event_type, payload, received_at, origin) "
                "VALUES ('verify:probe', 'ingestd', 'verify_probe', '', '1970-01-01T00:00:00.000Z', 'verify')"
            )
            row = conn.execute("SELECT max(id) FROM log_rows").fetchall()
            probed = "a probe row (empty log)"
        rid = row[0][0]
        for sql, params, what in (
            ("UPDATE events_raw SET event_type = event_type WHERE id = ?", (rid,), "UPDATE on events_raw"),
            ("UPDATE events_raw SET codec = codec WHERE id = ?", (rid,), "UPDATE of a codec on events_raw"),
            ("DELETE FROM events_raw WHERE id = ?", (rid,), "DELETE on events_raw"),
            ("UPDATE log_rows SET codec = codec WHERE id = ?", (rid,), "UPDATE on log_rows"),
            ("DELETE FROM log_rows WHERE id = ?", (rid,), "DELETE on log_rows"),
            (
                "UPDATE log_origins SET hash = hash WHERE id = (SELECT origin_id FROM log_rows WHERE id = ?)",
                (rid,),
                "UPDATE on log_origins",
            ),
            (
                "DELETE FROM log_origins WHERE id = (SELECT origin_id FROM log_rows WHERE id = ?)",
                (rid,),
                "DELETE on log_origins",
            ),
            (
                "UPDATE log_kinds SET event_type = event_type WHERE id = (SELECT kind FROM log_rows WHERE id = ?)",
                (rid,),
                "UPDATE on log_kinds",
            ),
            (
                "DELETE FROM log_kinds WHERE id = (SELECT kind FROM log_rows WHERE id = ?)",
                (rid,),
                "DELETE on log_kinds",
            ),
            *_session_probes(conn),
            ("UPDATE payload_codecs SET dictionary = dictionary WHERE id = 1", (), "UPDATE on payload_codecs"),
            ("DELETE FROM payload_codecs WHERE id = 1", (), "DELETE on payload_codecs"),
            *_block_probes(conn),
        ):
            problem = _expect_abort(conn, sql, params, what)
            if problem:
                problems.append(problem)
    finally:
        with contextlib.suppress(apsw.Error):
            conn.execute("ROLLBACK")
    return Check(
        "append_only",
        not problems,
        problems or [f"UPDATE and DELETE refused on {probed}, on the payload codecs and blocks"],
    )


def check_rollup(conn: Db) -> Check:
    """``token_usage_rollup`` equals the grouped scan of ``token_usage``. Read-only."""
    diffs = rollup.differences(conn, limit=MAX_DETAILS)
    n = conn.execute("SELECT count(*) FROM token_usage_rollup").fetchall()[0][0]
    return Check("rollup", not diffs, diffs or [f"{n} rollup rows equal the scan"])


def check_foreign_keys(conn: Db) -> Check:
    """``PRAGMA foreign_key_check`` finds nothing. Read-only."""
    problems = []
    for table, rowid, parent, fkid in conn.execute("PRAGMA foreign_key_check"):
        problems.append(f"{table} rowid {rowid}: no {parent} row for foreign key {fkid}")
        if len(problems) >= MAX_DETAILS:
            break
    return Check("foreign_keys", not problems, problems or ["no dangling references"])


def check_integrity(conn: Db) -> Check:
    """``PRAGMA integrity_check`` says ok. Read-only."""
    rows = [r[0] for r in conn.execute(f"PRAGMA integrity_check({MAX_DETAILS})")]
    ok = rows == ["ok"]
    return Check("integrity", ok, ["ok"] if ok else rows)


def check_usage_in_log(conn: Db) -> Check:
    """Every ``token_usage.message_id`` occurs in some log payload. Read-only.

    A full scan of the log (bounded memory: the set of distinct message ids, then one pass over
    payloads); acceptable for a verification command.
    """
    wanted: set[bytes] = {
        str(r[0]).encode("utf-8") for r in conn.execute("SELECT DISTINCT message_id FROM token_usage")
    }
    total = len(wanted)
    if wanted:
        for codec, stored in conn.execute("SELECT codec, payload FROM events_raw"):
            try:
                data = decode_payload(conn, codec, stored)
            except StorageError:
                continue  # named by check_payloads
            if b'"id"' not in data:
                continue
            for m in _ID_RE.finditer(data):
                wanted.discard(m.group(1))
            if not wanted:
                break
    missing = sorted(w.decode("utf-8", "replace") for w in wanted)
    details = [f"token_usage message {m} is not in events_raw" for m in missing[:MAX_DETAILS]]
    if len(missing) > MAX_DETAILS:
        details.append(f"... and {len(missing) - MAX_DETAILS} more")
    return Check("usage_in_log", not missing, details or [f"{total} messages found in the log"])


def check_pruned(conn: Db) -> Check:
    """No projection row is one a prune receipt covers (``ingestd.store.pruned``): what prune
    removed did not come back. Indexed range reads; read-only."""
    found = pruned.covered(conn, MAX_DETAILS)
    n = conn.execute("SELECT count(*) FROM prune_receipts WHERE dry_run = 0").fetchall()[0][0]
    return Check("pruned", not found, found or [f"no row older than the cutoffs of {n} prune receipts"])


def check_payloads(conn: Db) -> Check:
    """Every log payload decodes with a codec its database holds (migration 0013). Read-only.

    A full scan of the log, each row decoded as every reader decodes it
    (``ingestd.store.payload.decode``).
    """
    problems: list[str] = []
    by_codec: dict[int, int] = {}
    bad = 0
    for rid, codec, stored in conn.execute("SELECT id, codec, payload FROM events_raw"):
        try:
            decode_payload(conn, codec, stored)
        except StorageError as e:
            bad += 1
            if len(problems) < MAX_DETAILS:
                problems.append(f"events_raw row {rid}: {e.message}")
            continue
        by_codec[codec] = by_codec.get(codec, 0) + 1
    if bad > len(problems):
        problems.append(f"... and {bad - len(problems)} more")
    spread = ", ".join(f"codec {c}: {n}" for c, n in sorted(by_codec.items())) or "no rows"
    return Check("payloads", not problems, problems or [f"every payload decodes ({spread})"])


def check_projection(conn: Db) -> Check:
    """The projections were computed under this build's projector rules (``meta.projection_revision``).

    Stale projections disagree with a replay and report old figures (cost, titles); the finding
    names the command that re-projects. Read-only.
    """
    stale = stale_projection(conn, conn.filename or "PATH")
    if stale is None:
        return Check("projection", True, [f"projected under the current rules (revision {PROJECTION_REVISION})"])
    return Check("projection", False, [stale.message()])


def check_prices(conn: Db) -> Check:
    """Every rate is a finite number from 0 to ``MAX_USD_PER_MTOK`` (an infinite rate makes every cost infinite)."""
    bad = [
        f"model_pricing {m} {b} from {e}: usd_per_mtok {r!r} is not a rate"
        for m, b, e, r in conn.execute("SELECT model, bucket, effective_from, usd_per_mtok FROM model_pricing")
        if not isinstance(r, int | float) or not math.isfinite(r) or not 0 <= r <= MAX_USD_PER_MTOK
    ]
    return Check("prices", not bad, bad[:MAX_DETAILS] or ["every rate is finite"])


CHECKS: tuple[tuple[str, Callable[[Db], Check]], ...] = (
    ("ledger", check_ledger),
    ("append_only", check_append_only),
    ("rollup", check_rollup),
    ("foreign_keys", check_foreign_keys),
    ("integrity", check_integrity),
    ("usage_in_log", check_usage_in_log),
    ("payloads", check_payloads),
    ("pruned", check_pruned),
    ("prices", check_prices),
    ("projection", check_projection),
)


def run_checks(conn: Db) -> list[Check]:
    """Run every check; a check that errors is a failed check naming the error. Changes no data.

    Args:
        conn: a read-write connection (the append-only probe needs a write transaction it rolls back).

    Returns:
        One ``Check`` per entry of ``CHECKS``, in order.
    """
    out = []
    pending = None
    for name, fn in CHECKS:
        try:
            out.append(fn(conn))
        except (apsw.Error, StorageError) as e:
            err = translate(e) if isinstance(e, apsw.Error) else e
            if pending is None:
                pending = bool(mig.status(conn).pending)
            # An older schema (a restored backup from before a migration) lacks what the check reads:
            # say so, not "no such column", which reads as a damaged database.
            why = "migrations pending (run `ingestd migrate`)" if pending else err.message
            out.append(Check(name, False, [f"check could not run: {why}"]))
    return out
