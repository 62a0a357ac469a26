"""The read API's session search (``ingestd.report.sessions.Narrow``): an id prefix or a title's
words, whatever the case, where SQLite's ``lower`` can fold it."""

from __future__ import annotations

from ingestd.report.sessions import Narrow
from ingestd.store.connection import Db


def _found(search: str) -> list[str]:
    conn = Db(":memory:")
    conn.execute("CREATE TABLE sessions (id TEXT, title TEXT, project_path TEXT, project_slug TEXT, status TEXT)")
    conn.execute("INSERT INTO sessions VALUES ('a1b2', 'Été du Parseur', NULL, 'p', 'working')")
    conn.execute("INSERT INTO sessions VALUES ('c3d4', NULL, NULL, 'p', 'working')")
    where, params = Narrow(search=search).clauses()
    return [str(i) for (i,) in conn.execute(f"SELECT s.id FROM sessions s WHERE {' AND '.join(where)}", params)]


def test_search_finds_an_id_prefix_and_title_words_in_any_ascii_case() -> None:
    assert _found("A1") == ["a1b2"]
    assert _found("du PARSEUR") == ["a1b2"]
    assert _found("c3") == ["c3d4"]


def test_search_finds_a_title_with_letters_sqlite_cannot_fold_as_typed() -> None:
    # SQLite's lower() leaves 'É' as it is: the title as typed is searched too
    assert _found("Été") == ["a1b2"]
    assert _found("%") == [] and _found("a_b") == []  # LIKE's wildcards are text
