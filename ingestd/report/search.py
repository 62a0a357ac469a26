"""Full-text search over the projection ``search_docs`` (``ingestd search``, ``GET /api/search``).

The query is matched by SQLite FTS5 (``search_fts``, tokenizer ``unicode61``: words, case and
accents folded). By default the query is literal text: each whitespace-separated term must occur
(in that form or as a phrase of the words it holds: ``src/app.py`` matches the words ``src app
py`` in a row), so punctuation never needs quoting. ``fts=True`` passes FTS5's own query syntax
(``AND``/``OR``/``NOT``, ``"phrases"``, ``prefix*``, ``NEAR``) through; a query it cannot parse is an
``InputError`` naming the problem.

Results are best first (FTS5's bm25 rank), or newest first; the same record copied into a resumed
session's file (same record uuid, same place) is shown once, at its first log row.
"""

from __future__ import annotations

import re
from typing import Any

import apsw

from ingestd.core.projector import decode_row
from ingestd.core.search import KINDS, docs
from ingestd.errors import InputError
from ingestd.report.window import Window, range_clauses
from ingestd.store.connection import Db, scalar, storage_errors
from ingestd.store.logrows import rows_by_id

DEFAULT_LIMIT = 20
MAX_LIMIT = 1000
SORTS = ("rank", "time")
SNIPPET_CHARS = 160  # around the first match
_WORD = re.compile(r"[^\W_]+\*?")  # the tokenizer's words (letters and digits; "_" separates), a prefix's "*"
_OPERATORS = frozenset(("AND", "OR", "NOT", "NEAR"))


def literal_query(text: str) -> str:
    """``text`` as an FTS5 query of literal terms: each whitespace-separated term a quoted phrase,
    all of them required. A NUL separates words, as it does for the tokenizer (FTS5's query parser
    would end the string there). Raises InputError when there is no term."""
    terms = text.replace("\x00", " ").split()
    if not terms:
        raise InputError("the search query is empty: give a word to look for")
    return " ".join('"' + t.replace('"', '""') + '"' for t in terms)


def query_words(query: str, *, fts: bool) -> list[str]:
    """The words of ``query`` a snippet marks (FTS5's operators left out; ``word*`` a prefix)."""
    return [w for w in _WORD.findall(query) if not (fts and w in _OPERATORS)]


def snippet(text: str, words: list[str]) -> list[dict[str, Any]]:
    """About ``SNIPPET_CHARS`` characters of ``text`` around its first match of ``words``, as
    ``[{"text", "hit"}]`` (hit: a matched word; any case; ``word*`` matches words it begins), an
    ellipsis where the text is cut. No match (the index folds accents, this does not): the head."""
    alts = [re.escape(w[:-1]) + r"[^\W_]*" if w.endswith("*") else re.escape(w) for w in words if w.rstrip("*")]
    pattern = re.compile(r"(?<![^\W_])(?:" + "|".join(alts) + r")(?![^\W_])", re.IGNORECASE) if alts else None
    first = pattern.search(text) if pattern is not None else None
    start = 0 if first is None else max(0, first.start() - SNIPPET_CHARS // 3)
    if start:
        space = text.rfind(" ", max(0, start - 12), start)
        start = space + 1 if space >= 0 else start
    end = min(len(text), start + SNIPPET_CHARS)
    window = text[start:end]
    parts: list[dict[str, Any]] = [{"text": "…", "hit": False}] if start else []
    at = 0
    for m in pattern.finditer(window) if pattern is not None else ():
        if m.start() > at:
            parts.append({"text": window[at : m.start()], "hit": False})
        parts.append({"text": m.group(), "hit": True})
        at = m.end()
    if at < len(window):
        parts.append({"text": window[at:], "hit": False})
    if end < len(text):
        parts.append({"text": "…", "hit": False})
    return parts


def _texts(conn: Db, wanted: list[tuple[int, int, str]]) -> dict[tuple[int, int], str]:
    """The text of each ``(raw_event_id, seq, session_id)`` document, made again from its log row."""
    out: dict[tuple[int, int], str] = {}
    rows = rows_by_id(conn, sorted({w[0] for w in wanted}))
    sessions = {(w[0]): w[2] for w in wanted}
    for rid, row in rows.items():
        obj = decode_row(row)
        if obj is not None:
            for d in docs(row, obj, sessions[rid]):
                # a tool call's text starts with the tool's name, which the result names already
                lead = f"{d.label}\n" if d.kind == "tool" and d.label else ""
                out[(rid, d.seq)] = d.text[len(lead) :] if lead and d.text.startswith(lead) else d.text
    return out


def search_report(
    conn: Db,
    query: str,
    *,
    window: Window,
    kinds: tuple[str, ...] = (),
    project: str | None = None,
    session: str | None = None,
    limit: int = DEFAULT_LIMIT,
    sort: str = "rank",
    fts: bool = False,
) -> dict[str, Any]:
    """Documents matching ``query``. Read-only.

    Args:
        conn: a read connection of a database with the ``search_docs`` projection.
        query: literal terms, or FTS5 syntax when ``fts``.
        window: keeps documents whose record time is in ``[since, until)`` (an untimed document,
            a title, is kept only by an open window).
        kinds: keep these document kinds (``core.search.KINDS``); empty: all.
        project: keep sessions whose real project path contains this text (or whose folder name
            equals it), as ``sessions --project``.
        session: keep one session: its id or a prefix of it.
        limit: at most this many results (1 to ``MAX_LIMIT``).
        sort: ``rank`` (best match first) or ``time`` (newest first).

    Returns:
        ``{"query", "match", "window", "kinds", "count", "limited", "results"}``: ``match`` is the
        FTS5 expression run; ``limited`` says more results exist past ``limit``; each result has
        ``session_id``, ``agent_id`` (None: the main agent), ``kind``, ``label``, ``occurred_at``,
        ``project``, ``title``, ``slug``, ``doc_id`` and ``snippet`` (``[{"text", "hit"}]``, about
        ``SNIPPET_CHARS`` characters around the first match, read again from the log).

    Raises:
        InputError: an empty query, an FTS5 syntax error, an unknown kind or sort, a bad limit.
    """
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise InputError(f"unknown kind {bad[0]!r}: one of {', '.join(KINDS)}")
    if sort not in SORTS:
        raise InputError(f"unknown sort {sort!r}: one of {', '.join(SORTS)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit must be between 1 and {MAX_LIMIT}")
    match = query.replace("\x00", " ").strip() if fts else literal_query(query)
    if not match:
        raise InputError("the search query is empty: give a word to look for")
    where, params = range_clauses("d.occurred_at", window.since_utc, "d.occurred_at", window.until_utc)
    where.insert(0, "search_fts MATCH ?")
    params.insert(0, match)
    if kinds:
        where.append(f"d.kind IN ({', '.join('?' * len(kinds))})")
        params += list(kinds)
    if project:
        where.append("(instr(s.project_path, ?) > 0 OR s.project_slug = ?)")
        params += [project, project]
    if session:
        where.append("substr(d.session_id, 1, ?) = ?")
        params += [len(session), session]
    order = "search_fts.rank, d.doc_id" if sort == "rank" else "d.occurred_at IS NULL, d.occurred_at DESC, d.doc_id"
    sql = (
        "SELECT d.doc_id, d.session_id, d.agent_id, d.kind, d.label, d.occurred_at, d.uuid, d.seq,"
        " d.raw_event_id, s.project_path, s.title, s.slug"
        " FROM search_fts JOIN search_docs d ON d.doc_id = search_fts.rowid"
        " LEFT JOIN sessions s ON s.id = d.session_id"
        f" WHERE {' AND '.join(where)} ORDER BY {order}"
    )
    results: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    limited = False
    with storage_errors():
        try:
            cur = conn.execute(sql, tuple(params))
            for doc_id, sid, aid, kind, label, at, uuid, seq, rid, path, title, slug in cur:
                if uuid is not None:
                    if (uuid, seq) in seen:
                        continue
                    seen.add((uuid, seq))
                if len(results) == limit:
                    limited = True
                    break
                results.append(
                    {
                        "session_id": sid,
                        "agent_id": aid,
                        "kind": kind,
                        "label": label,
                        "occurred_at": at,
                        "project": path,
                        "title": title,
                        "slug": slug,
                        "snippet": [],
                        "doc_id": doc_id,
                        "_at": (rid, seq, sid),
                    }
                )
        except apsw.SQLError as e:
            if not fts:  # a literal query is quoted terms: an error here is not the query's
                raise
            detail = str(e).removeprefix("SQLError:").strip().removeprefix("fts5:").strip().rstrip(":")
            raise InputError(
                f"the search query {query!r} is not valid FTS5 syntax ({detail});"
                " without --fts it is read as literal words"
            ) from None
        texts = _texts(conn, [r["_at"] for r in results])
    words = query_words(query, fts=fts)
    for r in results:
        rid, seq, _ = r.pop("_at")
        r["snippet"] = snippet(texts.get((rid, seq), ""), words)
    return {
        "query": query,
        "match": match,
        "window": window.to_json(),
        "kinds": list(kinds) or list(KINDS),
        "count": len(results),
        "limited": limited,
        "results": results,
    }


SEARCH_OBJECTS = ("search_doc_rows", "search_fts_data", "search_fts_idx", "search_fts_docsize", "search_fts_config")


def index_size(conn: Db) -> dict[str, int | None] | None:
    """``{"documents", "bytes"}`` of the search projection: its documents, and the pages of its
    tables and indexes (``dbstat``, one object at a time: each walk reads only that object's pages;
    None when this SQLite has no ``dbstat``); None for a database not migrated to it. Read-only."""
    with storage_errors():
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'search_docs'").fetchall():
            return None
        documents = int(scalar(conn, "SELECT count(*) FROM search_docs") or 0)
        total: int | None = 0
        try:
            for name in SEARCH_OBJECTS:
                total = (total or 0) + int(
                    scalar(conn, "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?", (name,)) or 0
                )
        except apsw.SQLError:
            total = None
    return {"documents": documents, "bytes": total}
