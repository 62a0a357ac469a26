"""The search documents' compact table (migration 0033): the view ``search_docs`` gives back every
value written, whatever its form, from the store's writes and from a database of main before it.

``fixtures/upgrade/main-0032.db.gz`` was made by main at 897751a (schema 0032) from
``fixtures/projects``.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from ingestd.core.rows import SearchDocRow
from ingestd.core.search import KINDS, SEQ_SPAN
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.upsert import SEARCH_KIND_CODES, index_search_docs

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "upgrade" / "main-0032.db.gz"
VIEW = "SELECT doc_id, raw_event_id, seq, session_id, agent_id, kind, occurred_at, label, uuid FROM search_docs"
SID = "0062cc70-6d80-4eaf-9752-7b4d732d475b"

# (occurred_at, uuid, stored as): canonical values compact, every other one as its text
VALUES: list[tuple[str | None, str | None, tuple[str, str]]] = [
    ("2025-11-18T14:42:20.796Z", "dc81f572-5cf4-4887-a629-5d2dc3cc6db5", ("integer", "blob")),
    ("1970-01-01T00:00:00.000Z", "00000000-0000-0000-0000-000000000000", ("integer", "blob")),
    ("9999-12-31T23:59:59.999Z", "ffffffff-ffff-ffff-ffff-ffffffffffff", ("integer", "blob")),
    ("1969-12-31T23:59:59.999Z", "DC81F572-5CF4-4887-A629-5D2DC3CC6DB5", ("text", "text")),
    ("2025-02-30T00:00:00.000Z", "dc81f5725cf44887a6295d2dc3cc6db5", ("text", "text")),
    ("2025-11-18T24:00:00.000Z", "dc81f572-5cf4-4887-a629-5d2dc3cc6db5 ", ("text", "text")),
    ("2025-11-18T14:42:20.796+00:00", "u", ("text", "text")),
    ("２０２５-11-18T14:42:20.796Z", "same-uuid", ("text", "text")),
    (None, None, ("null", "null")),
]


def _docs(session_id: str = SID) -> list[SearchDocRow]:
    out = []
    for i, (at, uuid, _) in enumerate(VALUES):
        rid, seq = 1000 + i, i % 3 * 100
        kind = KINDS[i % len(KINDS)]
        agent = None if i % 2 else f"a{i}"
        label = "Bash" if kind == "tool" else None
        out.append(SearchDocRow(rid * SEQ_SPAN + seq, rid, seq, session_id, agent, kind, at, label, uuid, f"text {i}"))
    return out


def test_every_value_comes_back_through_the_view_and_canonical_ones_are_stored_compact(tmp_path: Path) -> None:
    conn = connect(tmp_path / "d.db")
    migrate(conn)
    docs = _docs()
    with conn:
        # a rebuild's fresh database: no log row names the session yet
        index_search_docs(conn, docs)
        index_search_docs(conn, docs)  # stored already: nothing written twice
    assert conn.execute(f"{VIEW} ORDER BY doc_id").fetchall() == [tuple(d[:-1]) for d in docs]
    stored = conn.execute("SELECT typeof(at), typeof(uuid) FROM search_doc_rows ORDER BY doc_id").fetchall()
    assert stored == [v[2] for v in VALUES]
    assert conn.execute("SELECT session_id FROM log_sessions").fetchall() == [(SID,)]
    assert conn.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH 'text'").fetchall() == [(len(docs),)]
    assert sorted(SEARCH_KIND_CODES) == sorted(KINDS)
    conn.close()


def test_a_database_of_main_before_the_compact_table_keeps_every_document(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    db.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    conn = connect(db)
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'search_docs'").fetchall() == [("table",)]
    # beside the fixture's own documents, every form of value, one of a session the log does not name
    extra = [*_docs(), *_docs("a-session-of-no-log-row")[:1]]
    extra[-1] = extra[-1]._replace(doc_id=2000 * SEQ_SPAN, raw_event_id=2000, seq=0)
    conn.executemany(f"INSERT INTO search_docs VALUES ({', '.join('?' * 9)})", [d[:-1] for d in extra])
    before: list[Any] = conn.execute(f"{VIEW} ORDER BY doc_id").fetchall()
    assert len(before) > len(extra)
    migrate(conn)
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'search_docs'").fetchall() == [("view",)]
    assert conn.execute(f"{VIEW} ORDER BY doc_id").fetchall() == before
    # the fixture's times are all canonical (its uuids are short hand-made ones, kept as text)
    assert conn.execute(
        "SELECT typeof(at), count(*) FROM search_doc_rows WHERE doc_id < 1000 * 256 GROUP BY 1 ORDER BY 1"
    ).fetchall() == [("integer", 30), ("null", 1)]
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


def test_documents_given_newest_first_reach_the_index_in_one_segment_write(tmp_path: Path) -> None:
    conn = connect(tmp_path / "d.db")
    migrate(conn)
    docs = [
        SearchDocRow(rid * SEQ_SPAN, rid, 0, SID, None, "text", None, None, None, f"word{rid} common")
        for rid in range(2000, 1000, -1)  # a session folded newest first
    ]
    writes: list[str] = []
    conn.set_profile(lambda sql, _ns: writes.append(sql) if "search_fts_data" in sql and "REPLACE" in sql else None)
    with conn:
        index_search_docs(conn, docs)
    conn.set_profile(None)
    # FTS5 flushes its pending terms as a segment whenever a rowid is not above the last one: a
    # thousand documents in descending order were a thousand segment writes (and merges)
    assert len(writes) < 50
    assert conn.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH 'common'").fetchall() == [(1000,)]
    assert conn.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH 'word1500'").fetchall() == [(1,)]
    conn.close()
