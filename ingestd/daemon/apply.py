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
from ingestd.daemon.health import WRITER
from ingestd.store.connection import CommitWith
from ingestd.store.foldahead import Ahead
from ingestd.store.foldcache import FoldCache
from ingestd.store.identity import identity_in_txn
from ingestd.store.isolate import Backoff, apply_isolating
from ingestd.store.writer import Prefold, apply_batch

# Hooks are never retried here: a busy database must answer 503 within the hook timeout.
HOOK_BACKOFF = Backoff(max_attempts=1)


class HookStore:
    """The hook writer's ``ApplyFn`` (``make_store``): ``apply_isolating`` with its own ``FoldCache``,
    which can also fold the next batch while this one commits (``fold_ahead``).

    ``ctx`` defaults to the database's identity (read in the first transaction). The watchdog pass
    applies the window the log records (the daemon logs its own at start, ``ingestd.daemon.main``).
    """

    def __init__(self, *, ctx: Ctx | None = None) -> None:
        self.cache = FoldCache()
        self._chosen: list[Ctx] = [ctx] if ctx is not None else []
        self.folded_ahead = 0  # batches folded during the COMMIT before theirs (``fold_ahead``)
        self.ahead_used = 0  # ... whose fold their transaction wrote (the others folded again inside)

    def __call__(
        self,
        conn: apsw.Connection,
        rows: Sequence[NewLogRow],
        *,
        prefold: Prefold | None = None,
        commit_with: CommitWith | None = None,
    ) -> int:
        """Append, fold and project ``rows`` in one transaction; the rows inserted.

        ``prefold``: this batch as ``fold_ahead`` made it (used when it holds); ``commit_with``:
        runs the COMMIT (``connection.write_txn``). Raises as ``apply_isolating``.
        """
        if not self._chosen:
            # Called inside the writer's transaction: the database's identity, so edges
            # the daemon projects match what `ingest` and `replay` project.
            self._chosen.append(identity_in_txn(conn))
        # a delivery the database refuses is logged and quarantined, never a 500 for the group
        result = apply_isolating(
            conn,
            rows,
            component=WRITER,
            backoff=HOOK_BACKOFF,
            ctx=self._chosen[0],
            cache=self.cache,
            prefold=prefold,
            commit_with=commit_with,
        )
        if prefold is not None and prefold.gate.accepted:
            self.ahead_used += 1
        return result.inserted

    def ahead(self) -> Ahead | None:
        """A fold of the next batch made ahead (``foldahead.Ahead``) on this writer's cache, to be
        added to only during a COMMIT of this store's (from ``commit_with``) and never on the
        connection; None before the first transaction. Its ``Prefold``: ``made``."""
        return Ahead(self.cache, self._chosen[0]) if self._chosen else None

    def made(self, ahead: Ahead | None) -> Prefold | None:
        """``ahead``'s ``Prefold`` (None: the batch folds in its transaction), counted."""
        pre = ahead.prefold() if ahead is not None else None
        self.folded_ahead += pre is not None
        return pre


def make_store(*, ctx: Ctx | None = None) -> HookStore:
    """A ``HookStore``: an ``ApplyFn`` over ``apply_isolating`` with its own ``FoldCache``."""
    return HookStore(ctx=ctx)


def store_rows(conn: apsw.Connection, rows: Sequence[NewLogRow]) -> int:
    """``apply_batch`` without a shared cache (tests, one-off writes); rows inserted."""
    return apply_batch(conn, rows).inserted
