"""The next batch folded while this one commits (the hook writer process's overlap, issue 14).

A write transaction's COMMIT (WAL pages written, fsync) runs with the GIL released; the fold of
the batch after it is pure Python over the writer's own ``FoldCache``. ``fold_ahead`` makes that
fold during the COMMIT (``ingestd.daemon.writerchild``), under the log ids the rows will get if
they all go in next (``FoldCache.ahead``), and hands it to the next ``apply_batch`` as a
``Prefold`` carrying the states: used only when every row went in at those ids and nobody else
committed in between (``writer._prefold_holds``), else that batch folds inside its transaction
as always. Whatever the outcome, the projections are those of folding inside the transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from ingestd.core import derive, projector
from ingestd.core.records import LogRow, NewLogRow
from ingestd.core.state import SessionState
from ingestd.core.touch import Ctx
from ingestd.store.foldcache import FoldCache
from ingestd.store.writer import Prefold, PrefoldGate


class NeedsLog(Exception):
    """The fold asked for the session's log (a refold): it cannot be made outside the transaction."""


def _no_history() -> list[LogRow]:
    raise NeedsLog


class Ahead:
    """One batch's fold made ahead, chunk by chunk as its rows arrive, onto ``cache``'s states.

    Start it only while the batch before has folded into ``cache`` and is committing
    (``cache.ahead`` set; the connection not touched meanwhile). Pure apart from ``cache``: the
    states of the sessions folded are taken out of it (they travel in the ``Prefold`` and go back
    when it is written; a refused or abandoned fold leaves them out, and the next fold reads those
    sessions from the log).

    Args:
        cache: the writer's ``FoldCache``.
        ctx: the instance / host ids the writer stamps on edges.
    """

    def __init__(self, cache: FoldCache, ctx: Ctx) -> None:
        self._cache, self._ctx = cache, ctx
        self.ok = cache.ahead is not None
        self._first_id, self._version = cache.ahead if cache.ahead is not None else (0, 0)
        self.rows = 0
        self._keys: set[str] = set()
        self._states: dict[str, tuple[SessionState, int]] = {}
        self._changes = derive.Changes()

    def add(self, rows: Sequence[NewLogRow]) -> bool:
        """Fold ``rows`` as the batch's next rows, under the ids they will get if the whole batch
        goes in next. False, and the fold abandoned for good, when it cannot be made without the
        database: ``cache.ahead`` was unset, a key comes twice, a session with rows is in neither
        this fold nor ``cache``, or a session needs a refold."""
        if not self.ok:
            return False
        by_session: dict[str, list[LogRow]] = {}
        for i, r in enumerate(rows):
            if r.session_id is not None:
                by_session.setdefault(r.session_id, []).append(r.logged(self._first_id + self.rows + i))
        keys = {r.idempotency_key for r in rows}
        known = all(s in self._states or self._cache.has(s) for s in by_session)
        if len(keys) != len(rows) or not keys.isdisjoint(self._keys) or not known:
            self.ok = False
            return False
        try:
            for sid, srows in by_session.items():
                state = self._states[sid][0] if sid in self._states else self._cache.take(sid)[0]
                state, ch = projector.fold(state, sid, srows, self._ctx, _no_history)
                self._states[sid] = (state, srows[-1].id)
                self._changes.extend(ch)
        except NeedsLog:
            self.ok = False
            return False
        self._keys |= keys
        self.rows += len(rows)
        return True

    def prefold(self) -> Prefold | None:
        """The ``Prefold`` of every row added (with ``states`` and ``version``); None when abandoned or empty."""
        if not self.ok or not self.rows:
            return None
        return Prefold(self._first_id, self._changes, PrefoldGate(), states=self._states, version=self._version)


def fold_ahead(cache: FoldCache, rows: Sequence[NewLogRow], ctx: Ctx) -> Prefold | None:
    """``rows`` folded ahead in one chunk (``Ahead``): the ``Prefold``, or None when it cannot be made."""
    ahead = Ahead(cache, ctx)
    ahead.add(rows)
    return ahead.prefold()
