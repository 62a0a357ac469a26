"""Titles from summaries in the central store: the central form of ``ingestd.store.titles`` (SPEC §4.1).

``resolve_titles`` runs in each slice's transaction of ``ingestd.central.project.project_store``.
"""

from __future__ import annotations

from typing import Any

import orjson
import psycopg

from ingestd.core.blocks import ts_of
from ingestd.core.projector import decode_row
from ingestd.core.records import LogRow

# The title of a session with no title of its own: its latest summary (ingestd.store.titles._REFRESH;
# then the host id, between two hosts' copies of one file).
_REFRESH = (
    "UPDATE sessions SET title = s.summary, title_source = CASE WHEN s.summary IS NULL THEN NULL ELSE 'summary' END"
    " FROM (SELECT u.sid, (SELECT m.summary FROM summaries m WHERE m.leaf_session = u.sid"
    "   ORDER BY m.leaf_at DESC, m.origin DESC, m.origin_gen DESC, m.origin_offset DESC, m.host_id DESC LIMIT 1)"
    "   AS summary FROM unnest(%s::text[]) AS u(sid)) AS s"
    " WHERE sessions.id = s.sid AND (sessions.title_source IS NULL OR sessions.title_source = 'summary')"
    " AND (sessions.title IS DISTINCT FROM s.summary OR sessions.title_source IS DISTINCT FROM"
    "   CASE WHEN s.summary IS NULL THEN NULL ELSE 'summary' END)"
)

_SLICE_SUMMARIES = (
    "SELECT m.host_id, m.origin, m.origin_gen, m.origin_offset, m.leaf_uuid, m.leaf_session, m.leaf_at"
    " FROM summaries m WHERE (m.host_id, m.origin) IN (SELECT DISTINCT e.host_id, e.origin FROM events_raw e"
    " WHERE e.id > %s AND e.id <= %s AND e.source = 'jsonl')"
)
_LEAF_ROWS = (
    "SELECT session_id, payload, received_at FROM events_raw WHERE host_id = %s AND origin = %s"
    " AND source = 'jsonl' AND id <= %s AND session_id IS NOT NULL AND position(%s::bytea in payload) > 0"
)


def resolve_titles(pg: psycopg.Connection[Any], mark: int, through: int, sids: list[str]) -> None:
    """Join summaries to their leaf's session and give untitled sessions their summary title.

    The central form of ``ingestd.store.titles`` (SPEC §4.1): every summary of a file (of one host)
    that the slice ``(mark, through]`` added rows to gets, as its leaf, the smallest (session id,
    record time) among the records of that file whose ``uuid`` is its ``leaf_uuid`` (the log through
    ``through``; the same minimum the local store reaches in any arrival order). Then every session
    the slice re-folded or whose summaries moved gets ``titles.refresh``'s title. In the caller's
    transaction.
    """
    retitle = set(sids)
    for h, origin, gen, offset, leaf, old, old_at in pg.execute(_SLICE_SUMMARIES, (mark, through)).fetchall():
        best: tuple[str, str] | None = None
        for sid, payload, received_at in pg.execute(
            _LEAF_ROWS, (h, origin, through, b'"uuid":' + orjson.dumps(leaf))
        ).fetchall():
            obj = decode_row(LogRow(0, "jsonl", "", bytes(payload), str(received_at), sid, origin))
            if obj is None or obj.get("uuid") != leaf:
                continue
            cand = (str(sid), ts_of(obj, str(received_at)))
            if best is None or cand < best:
                best = cand
        if best is not None and best != (old, old_at):
            pg.execute(
                "UPDATE summaries SET leaf_session = %s, leaf_at = %s"
                " WHERE host_id = %s AND origin = %s AND origin_gen = %s AND origin_offset = %s",
                (best[0], best[1], h, origin, gen, offset),
            )
            retitle.add(best[0])
            if old is not None:
                retitle.add(str(old))
    if retitle:
        pg.execute(_REFRESH, (sorted(retitle),))
