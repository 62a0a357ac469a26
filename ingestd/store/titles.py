"""Summary titles joined to the session they describe (SPEC §4.1, migration 0010).

A session's own title candidates (``custom-title``, a hook's ``session_title``, ``ai-title``) are
folded by the projector; a ``summary`` record cannot be: it sits in one file but belongs to the
session of the record its ``leafUuid`` names, which is another session's fold (1.0.x writes the
summary of the previous session at the top of the file that continues it, with that session's
history copied in: ``corpus/claude-projects/-Users-user-linear-agent/263940d8-….jsonl`` line 1
names line 141, a record of ``998db3cd-…``). The join is done here, in both directions, so its
result does not depend on which arrived first:

- a summary row written by the projector looks its leaf up among the log rows of its own file
  (``resolve_summaries``; the log's origin index bounds it to that file);
- a log row appended later whose ``uuid`` is the leaf of a summary of the same file sets it
  (``resolve_leaves``).

The leaf's session is the smallest session id among the records with that uuid in that file
(one, in practice), ``leaf_at`` that record's timestamp. A session with no title of its own then
shows the summary whose leaf is the latest (``refresh``). A summary whose leaf is in no record of
its file titles no session: it describes a conversation this log does not hold (c44afee0-… in the
corpus), and naming the file's session after it was the bug this replaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from ingestd.core.blocks import Leaf, best_leaf, leaf_claim
from ingestd.core.decode import decode_line
from ingestd.core.projector import decode_row
from ingestd.core.records import LogRow
from ingestd.core.rows import SummaryRow
from ingestd.store.connection import Db
from ingestd.store.payload import decode as decode_payload
from ingestd.store.sqlgen import upsert_sql

UPSERT_SUMMARY = upsert_sql("summaries", SummaryRow._fields, ("origin", "origin_gen", "origin_offset"), update=())
_SET_LEAF = (
    "UPDATE summaries SET leaf_session = ?4, leaf_at = ?5"
    " WHERE origin = ?1 AND origin_gen = ?2 AND origin_offset = ?3"
    " AND (leaf_session IS NULL OR (?4, ?5) < (leaf_session, leaf_at))"
    " RETURNING (SELECT 1)"
)
# The title of a session with no title of its own: its latest summary (by the leaf's time, then
# the summary's place in the log), marked as such; a session that has its own title keeps it.
_REFRESH = (
    "UPDATE sessions SET title = s.summary, title_source = CASE WHEN s.summary IS NULL THEN NULL ELSE 'summary' END"
    " FROM (SELECT j.value AS sid, (SELECT m.summary FROM summaries m WHERE m.leaf_session = j.value"
    "   ORDER BY m.leaf_at DESC, m.origin DESC, m.origin_gen DESC, m.origin_offset DESC LIMIT 1) AS summary"
    "   FROM json_each(?) j) AS s"
    " WHERE sessions.id = s.sid AND (sessions.title_source IS NULL OR sessions.title_source = 'summary')"
    " AND (sessions.title IS NOT s.summary OR sessions.title_source IS NOT"
    "   CASE WHEN s.summary IS NULL THEN NULL ELSE 'summary' END)"
)


# A file's lines, every generation, through the log's origin index (migration 0030); a raw row only
# when it holds one of the leaves looked for (``_lines_of_file``).
_LINES_OF_FILE = (
    "SELECT session_id, codec, payload, received_at FROM events_raw"
    " WHERE origin = ? AND source = 'jsonl' AND (codec != 0 OR {held})"
)
# Leaves looked for in one read of a file (each one a bound parameter of it).
LEAVES_PER_READ = 64


def _lines_of_file(n: int) -> str:
    return _LINES_OF_FILE.format(held=" OR ".join(["instr(payload, ?) > 0"] * n))


def _needle(leaf: str) -> bytes:
    return b'"uuid":' + orjson.dumps(leaf)


def _set_leaf(conn: Db, key: Sequence[Any], sid: str, at: str, old: str | None, out: set[str]) -> None:
    if conn.execute(_SET_LEAF, (*key, sid, at)).fetchall():
        out.add(sid)
        if old is not None:
            out.add(old)


def _best_leaves(log: Db, origin: str, leaves: Sequence[str]) -> dict[str, Leaf]:
    """Each of ``leaves`` that a record of file ``origin`` claims, with its best claim
    (``best_leaf``): the file read once for up to ``LEAVES_PER_READ`` of them, each record decoded
    once. Read-only."""
    claims: dict[str, list[Leaf | None]] = {}
    for i in range(0, len(leaves), LEAVES_PER_READ):
        part = [(leaf, _needle(leaf)) for leaf in leaves[i : i + LEAVES_PER_READ]]
        # a raw row is filtered in SQL; a compressed one only once decoded (migration 0013)
        for sid, codec, stored, received_at in log.execute(
            _lines_of_file(len(part)), (origin, *(needle for _, needle in part))
        ):
            data = decode_payload(log, codec, stored)
            held = [leaf for leaf, needle in part if needle in data]
            if not held:
                continue
            obj = decode_line(data).obj
            for leaf in held:
                claims.setdefault(leaf, []).append(
                    leaf_claim(obj, None if sid is None else str(sid), str(received_at), leaf)
                )
    best = {leaf: best_leaf(cs) for leaf, cs in claims.items()}
    return {leaf: b for leaf, b in best.items() if b is not None}


def resolve_summaries(log: Db, conn: Db, rows: Iterable[SummaryRow]) -> set[str]:
    """Store the projector's summary rows and find each one's leaf among its file's log rows (a
    file read once for all its summaries: ``_best_leaves``).

    Args:
        log: the connection whose ``events_raw`` holds the log (the same as ``conn`` except in a
            rebuild, which reads one database's log and writes another's projections). Read-only.
        conn: the connection written, inside the caller's transaction.
        rows: ``derive.Changes.summaries`` rows.

    Returns:
        set of session ids whose summary title may have changed.
    """
    by_file: dict[str, list[SummaryRow]] = {}
    for r in rows:
        conn.execute(UPSERT_SUMMARY, r)
        by_file.setdefault(r.origin, []).append(r)
    out: set[str] = set()
    for origin, summaries in by_file.items():
        best = _best_leaves(log, origin, sorted({r.leaf_uuid for r in summaries}))
        for r in summaries:
            key = (origin, r.origin_gen, r.origin_offset)
            old: Any = conn.execute(
                "SELECT leaf_session FROM summaries WHERE origin = ? AND origin_gen = ? AND origin_offset = ?", key
            ).fetchall()[0][0]
            found = best.get(r.leaf_uuid)
            if found is not None:
                _set_leaf(conn, key, found[0], found[1], old, out)
    return out


def resolve_leaves(conn: Db, rows: Sequence[LogRow]) -> set[str]:
    """Set the leaf of every stored summary whose leaf record is among ``rows`` (just appended).

    One indexed query per call for the files ``rows`` come from; nothing more when none of them
    holds a summary. Written inside the caller's transaction.

    Returns:
        set of session ids whose summary title may have changed.
    """
    origins = sorted({r.origin for r in rows if r.source == "jsonl"})
    if not origins:
        return set()
    pending: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for origin, gen, offset, leaf, leaf_session in conn.execute(
        "SELECT origin, origin_gen, origin_offset, leaf_uuid, leaf_session FROM summaries"
        " WHERE origin IN (SELECT value FROM json_each(?))",
        (orjson.dumps(origins).decode(),),
    ):
        pending.setdefault((str(origin), str(leaf)), []).append((origin, gen, offset, leaf_session))
    out: set[str] = set()
    if not pending:
        return out
    held = {o for o, _ in pending}  # only rows of a file holding a summary can be its leaf
    for r in rows:
        if r.source != "jsonl" or r.session_id is None or r.origin not in held:
            continue
        obj = decode_row(r)
        uuid = obj.get("uuid") if obj is not None else None
        if not isinstance(uuid, str) or obj is None:  # (obj: narrows the type; uuid is None then anyway)
            continue
        claim = leaf_claim(obj, r.session_id, r.received_at, uuid)
        if claim is None:
            continue
        for origin, gen, offset, old in pending.get((r.origin, uuid), ()):
            _set_leaf(conn, (origin, gen, offset), claim[0], claim[1], old, out)
    return out


def refresh(conn: Db, sids: Iterable[str]) -> None:
    """Give each of ``sids`` without a title of its own its latest summary (or none). In the caller's transaction."""
    todo = sorted(set(sids))
    if todo:
        conn.execute(_REFRESH, (orjson.dumps(todo).decode(),))
