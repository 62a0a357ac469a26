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


def fold_ahead(cache: FoldCache, rows: Sequence[NewLogRow], ctx: Ctx) -> Prefold | None:
    """Fold ``rows`` onto ``cache``'s states, outside any transaction, as the next batch.

    Call it only while the batch before has folded into ``cache`` and is committing (``cache.ahead``
    set, the connection not touched meanwhile). Pure apart from ``cache``.

    Args:
        cache: the writer's ``FoldCache``; the states of the sessions folded are taken out of it
            (they travel in the ``Prefold`` and go back when it is written; a refused or dropped
            prefold leaves them out, and the next fold reads those sessions from the log).
        rows: the next batch, in order.
        ctx: the instance / host ids the writer stamps on edges.

    Returns:
        A ``Prefold`` with ``states`` and ``version``; None (``cache`` untouched, except after a
        refold request, which leaves the sessions taken so far out) when ``cache.ahead`` is unset,
        a key comes twice, a session with rows is not in ``cache``, or a session needs a refold.
    """
    if cache.ahead is None or not rows:
        return None
    first_id, version = cache.ahead
    by_session: dict[str, list[LogRow]] = {}
    for i, r in enumerate(rows):
        if r.session_id is not None:
            by_session.setdefault(r.session_id, []).append(r.logged(first_id + i))
    if len({r.idempotency_key for r in rows}) != len(rows) or not all(cache.has(s) for s in by_session):
        return None
    changes = derive.Changes()
    states: dict[str, tuple[SessionState, int]] = {}
    try:
        for sid, srows in by_session.items():
            state, _ = cache.take(sid)
            state, ch = projector.fold(state, sid, srows, ctx, _no_history)
            states[sid] = (state, srows[-1].id)
            changes.extend(ch)
    except NeedsLog:
        return None
    return Prefold(first_id, changes, PrefoldGate(), states=states, version=version)
