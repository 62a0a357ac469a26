"""Folding batches one after another the way the shell does (``ingestd.store.writer.fold_into``)."""

from __future__ import annotations

from collections.abc import Sequence

from ingestd.core.derive import Changes
from ingestd.core.projector import fold
from ingestd.core.records import LogRow
from ingestd.core.state import SessionState
from ingestd.core.touch import Ctx


class Incremental:
    """One session's fold state across calls; every row folded so far is the fold's history."""

    def __init__(self, session_id: str, ctx: Ctx | None = None) -> None:
        self.session_id = session_id
        self.ctx = ctx if ctx is not None else Ctx()
        self.state: SessionState | None = None
        self.rows: list[LogRow] = []

    def __call__(self, batch: Sequence[LogRow]) -> Changes:
        """Fold ``batch`` onto the state; return the touched rows."""
        self.rows.extend(batch)
        self.state, ch = fold(self.state, self.session_id, batch, self.ctx, lambda: list(self.rows))
        return ch
