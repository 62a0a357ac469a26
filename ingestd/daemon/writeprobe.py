"""Whether a failing writer can write again: a tiny real write on a timer while it is failing.

``Health`` counts the writer as failing from a failed write until its next success, and only a
hook (or a watchdog row) makes a write: after a full disk had room again, ``/api/health`` said 503
and ``ingestd status`` unhealthy, the failure growing older, until some hook happened to arrive
(breaker3). So while the writer is failing, ``run`` asks the writer itself (its process or thread,
its connection) every ``interval_s`` to make one small write, and a success clears the failure.

The write (``probe``) inserts and deletes one ``meta`` row in one ``BEGIN IMMEDIATE`` transaction:
nothing changes in the database, yet the commit appends the touched pages to the WAL, which is
what a full disk, a read-only file or an I/O error refuses (a ``BEGIN IMMEDIATE`` / ``ROLLBACK``
alone writes nothing and succeeds on a full disk).
"""

from __future__ import annotations

import asyncio

import apsw

from ingestd.daemon.committer import HookWriter
from ingestd.daemon.health import WRITER, Health
from ingestd.errors import StorageError
from ingestd.logs import get_logger
from ingestd.store.connection import write_txn

log = get_logger("ingestd.serve")

PROBE_INTERVAL_S = 2.0
PROBE_KEY = "ingestd.write_probe"


def _insert_and_delete(conn: apsw.Connection) -> None:
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, '')", (PROBE_KEY,))
    conn.execute("DELETE FROM meta WHERE key = ?", (PROBE_KEY,))


def probe(conn: apsw.Connection) -> None:
    """One committed write on ``conn`` that leaves the database as it was (see the module docstring).

    Raises:
        StorageError: the database refused it (full, read-only, I/O, busy past the timeout).
    """
    write_txn(conn, _insert_and_delete)


async def run(writer: HookWriter, health: Health, stop: asyncio.Event, interval_s: float | None = None) -> None:
    """Until ``stop``: every ``interval_s`` (default ``PROBE_INTERVAL_S``) while the writer is failing, probe it.

    Side effects: one write through ``writer`` per probe; ``health.ok(WRITER)`` after one succeeds
    (logged once, ``writer_recovered``), unless another write failed while the probe ran (a full
    disk fails every write with the same text, so the failure is compared by identity). A refused
    probe changes nothing (the failure stays). A plain sleep per tick (no task or timer per
    ``wait_for``): the daemon cancels this coroutine when it stops.
    """
    every_s = PROBE_INTERVAL_S if interval_s is None else interval_s
    while not stop.is_set():
        await asyncio.sleep(every_s)
        before = health.failure(WRITER)
        if before is None or stop.is_set():
            continue
        try:
            await writer.call(probe)
        except StorageError:
            continue  # still refused: the failure (and its age) stands
        if health.failure(WRITER) is before:  # no newer failure arrived while the probe ran
            health.ok(WRITER)
            log.info("writer_recovered", was=before.reason)
