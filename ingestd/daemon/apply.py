"""The one call the writer makes per grouped transaction: log rows in, projections out.

``make_store`` binds the store's single entry point, ``ingestd.store.writer.apply_batch``
(append the log rows skipping existing keys, fold them through the projector for both
sources, upsert projections, run the watchdog pass, all in one ``BEGIN IMMEDIATE``
transaction), to a fold cache that lives as long as the writer, so a hook for a session
already seen costs work proportional to the new rows only.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from ingestd.core.records import NewLogRow
from ingestd.core.touch import Ctx
from ingestd.daemon.committer import ApplyFn
from ingestd.daemon.health import WRITER
from ingestd.store.foldcache import FoldCache
from ingestd.store.identity import identity_in_txn
from ingestd.store.isolate import Backoff, apply_isolating
from ingestd.store.writer import apply_batch

# Hooks are never retried here: a busy database must answer 503 within the hook timeout.
HOOK_BACKOFF = Backoff(max_attempts=1)


def make_store(*, ctx: Ctx | None = None) -> ApplyFn:
    """An ``ApplyFn`` over ``apply_isolating`` with its own ``FoldCache``.

    ``ctx`` defaults to the database's identity. The watchdog pass applies the window the log
    records (the daemon logs its own at start, ``ingestd.daemon.main``).
    """
    cache = FoldCache()
    chosen: list[Ctx] = [ctx] if ctx is not None else []

    def store(conn: apsw.Connection, rows: Sequence[NewLogRow]) -> int:
        if not chosen:
            # Called inside the writer's transaction: the database's identity, so edges
            # the daemon projects match what `ingest` and `replay` project.
            chosen.append(identity_in_txn(conn))
        # a delivery the database refuses is logged and quarantined, never a 500 for the group
        return apply_isolating(
            conn,
            rows,
            component=WRITER,
            backoff=HOOK_BACKOFF,
            ctx=chosen[0],
            cache=cache,
        ).inserted

    return store


def store_rows(conn: apsw.Connection, rows: Sequence[NewLogRow]) -> int:
    """``apply_batch`` without a shared cache (tests, one-off writes); rows inserted."""
    return apply_batch(conn, rows).inserted
