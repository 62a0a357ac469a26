"""The projector: a pure per-session fold over log rows (SPEC §4, DESIGN.md).

``fold(state, rows)`` merges the evidence of ``rows`` (one session's, any order, any
batching) into ``state`` and returns the full projection rows of every entity the rows
touched (``ingestd.core.derive``). Each row goes to the handler of its source and kind
(``_fold_row``): hook deliveries to ``hookfold`` (one handler per hook event), transcript
records to ``transcript`` (one handler per record kind), ``.meta.json`` sidecars to
``transcript.sidecar``, status-line snapshots to ``statusline`` (a sample row each, no session
evidence), Claude Code's OTLP records to ``otelfold`` (a request's own row is kept, not folded);
of ingestd's own rows only quarantine markers are evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ingestd.core import derive
from ingestd.core.decode import UNDECODABLE, decode_line
from ingestd.core.hookfold import fold_hook
from ingestd.core.otelfold import fold_otlp
from ingestd.core.otlp import REQUEST as OTLP_REQUEST
from ingestd.core.otlp import SOURCE as OTLP
from ingestd.core.oversized import OVERSIZED, salvage, salvage_line
from ingestd.core.records import META, LogRow
from ingestd.core.rows import EventRow, OtelMetricRow, RateLimitSampleRow, SearchDocRow
from ingestd.core.search import docs as search_docs
from ingestd.core.state import SessionState
from ingestd.core.statusline import SOURCE as STATUSLINE
from ingestd.core.statusline import sample_row
from ingestd.core.touch import Ctx, Touched
from ingestd.core.transcript import fold_record, index_record, sidecar
from ingestd.core.validate import STORAGE_MARKER, refold_state, storage_quarantine


def decode_row(row: LogRow) -> dict[str, Any] | None:
    """The row's object: the one already decoded, else the payload decoded leniently (hooks too);
    for an ``oversized`` marker or a line that is JSON but cannot be decoded within the decoder's limits
    (``decode.UNDECODABLE``: too deep, a number too large, too wide for the memory budget; a line an
    older ingestd logged whole), the record salvaged from its kept bytes (``oversized.salvage``)."""
    if row.obj is not None:
        return row.obj
    if row.event_type == OVERSIZED and row.source == "jsonl":
        return salvage(row.payload)
    # an `invalid` row is decoded again: the decoder may accept it now (a BOM before the object,
    # logged `invalid` before projection revision 5); still invalid, it stays skipped, except a line
    # that cannot be taken apart (``UNDECODABLE``): what its head and tail tell counts, as for an
    # oversized line
    dec = decode_line(row.payload)
    if dec.reason in UNDECODABLE and row.source == "jsonl":
        return salvage_line(row.payload)
    return dec.obj


# The session's whole log so far, in any order (isolated rows left out): read again only when the
# fold must refold (``SessionState.needs_refold``). Called by the core, supplied by the shell.
History = Callable[[], Iterable[LogRow]]


def fold(
    state: SessionState | None, session_id: str, rows: Iterable[LogRow], ctx: Ctx, history: History
) -> tuple[SessionState, derive.Changes]:
    """Fold one session's log rows into its state; return the state and the touched rows.

    Args:
        state: the session's state so far (None: empty). Mutated in place and returned (a refold
            returns a new state).
        session_id: str, the session every row belongs to.
        rows: log rows of that session (any order; invalid and file_reset rows are skipped). Lines
            of every generation of a rewritten file are folded: a superseded generation's lines stay
            evidence (DESIGN.md "Rewritten files": billed calls stay billed; a fold cannot retract).
        ctx: instance / host ids stamped on edges.
        history: the session's whole log including ``rows`` (``History``). While the state asks
            for it (a refused timestamp in a file folded before it was indexed: ``needs_refold``,
            ``ingestd.core.validate``), the session is folded again from ``history()`` into
            ``validate.refold_state``; every caller gets that loop, none can forget it.

    Returns:
        ``(state, changes)``: ``changes`` holds full rows for every touched entity, those of every
        pass in order (later rows of one key win).
    """
    state, changes = _fold_once(state, session_id, rows, ctx)
    while state.needs_refold:
        log = list(history())
        state, more = _fold_once(_indexed(refold_state(state), log), session_id, log, ctx)
        changes.extend(more)
    return state, derive.storable_changes(changes)


def _indexed(state: SessionState, rows: Sequence[LogRow]) -> SessionState:
    """``state`` with the valid timestamps of ``rows`` in its indexed files noted first, so that a
    refused record's inferred time (``ingestd.core.validate``) is final when it is folded, whatever
    the order of ``rows``: the refold asks for no other refold."""
    for row in rows:
        if row.source == "jsonl" and row.event_type != META and (row.origin, row.origin_gen) in state.ts_index:
            obj = decode_row(row)
            if obj is not None:
                index_record(state, row, obj)
    return state


def given(rows: Sequence[LogRow]) -> History:
    """The ``History`` that is ``rows`` (the caller holds the session's whole log already)."""
    return lambda: rows


def fold_log(session_id: str, rows: Sequence[LogRow], ctx: Ctx) -> tuple[SessionState, derive.Changes]:
    """Fold a session's whole log (``rows``: every one of its log rows) from an empty state."""
    return fold(None, session_id, rows, ctx, given(rows))


def _fold_once(
    state: SessionState | None, session_id: str, rows: Iterable[LogRow], ctx: Ctx
) -> tuple[SessionState, derive.Changes]:
    """One pass of ``fold`` (no refold)."""
    if state is None:
        state = SessionState(session_id)
    t = Touched()
    events: list[EventRow] = []
    samples: list[RateLimitSampleRow] = []
    metrics: list[OtelMetricRow] = []
    found: list[SearchDocRow] = []
    for row in rows:
        if row.source == OTLP:
            obj = decode_row(row)
            if obj is not None and row.event_type != OTLP_REQUEST:
                fold_otlp(state, row, obj, t, metrics)
            continue
        if row.source == STATUSLINE:
            obj = decode_row(row)
            if obj is not None:
                samples.append(sample_row(row, obj))
            continue
        obj = _fold_row(state, row, t, events)
        if obj is not None and row.source == "jsonl" and row.event_type != META:
            found.extend(search_docs(row, obj, session_id))
    changes = derive.derive(state, t, ctx)
    changes.events.extend(events)
    changes.rate_limit_samples.extend(samples)
    changes.otel_metrics.extend(metrics)
    changes.search_docs.extend(found)
    changes.quarantine.extend(t.quarantined)
    return state, changes


def _fold_row(state: SessionState, row: LogRow, t: Touched, events: list[EventRow]) -> dict[str, Any] | None:
    """Fold one log row through the handler of its source and kind (see the module docstring);
    the row's decoded object (None: nothing was decoded, or an ingestd row)."""
    if row.source == "ingestd":
        # ingestd's own rows: a quarantine marker is evidence (the row it names was isolated);
        # file_reset markers and watchdog ticks are not the session's evidence
        if row.event_type == STORAGE_MARKER:
            q = storage_quarantine(row.id, state.session_id, row.origin, row.origin_offset, row.payload)
            if q is not None:
                t.quarantined.append(q)
        return None
    obj = decode_row(row)
    if obj is None:
        return None
    t.row = row
    t.bad_at = None
    if row.source == "hook":
        events.append(fold_hook(state, row, obj, t))
    elif row.event_type == META:
        sidecar(state, row, obj, t)
    else:
        fold_record(state, row, obj, t)
    return obj
