"""Session titles (SPEC §4.1; ``ingestd.store.titles`` and its central form,
``ingestd.central.project.resolve_titles``).

custom-title > a hook's session_title > ai-title > summary; the latest candidate of a kind wins;
a summary belongs to the session of the record its ``leafUuid`` names (found among the records of
the summary's own file), whatever order the rows arrive in, and a rebuild agrees.

Cases that need a store of their own use session ids of their own instead: rows of different
sessions and files do not meet, so one store holds them all (and one delivery carries one row of
each case).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.core.framing import Framer
from ingestd.core.keys import short_hash
from ingestd.core.records import NewLogRow, line_row
from ingestd.store import titles as store_titles
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.writer import apply_batch
from tests.stores.stores import Store
from tests.support import statements

READ = "2026-03-01T00:00:00.000Z"


def sid(kind: str, n: int = 0) -> str:
    """Session ``n`` of kind ``a`` or ``b`` (a UUID, as Claude Code's)."""
    return f"{kind * 8}-0000-4000-8000-{n:012d}"


def file_rows(origin: str, path_session: str, recs: list[dict[str, Any]]) -> list[NewLogRow]:
    data = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    oh = short_hash(origin.encode())
    return [
        line_row(ln, origin=origin, origin_hash=oh, gen=0, received_at=READ, path_session=path_session)
        for ln in Framer(0).feed(data)
    ]


def main_file(session: str, recs: list[dict[str, Any]]) -> list[NewLogRow]:
    return file_rows(f"-w/{session}.jsonl", session, recs)


def hook(session: str, name: str, at: str, **body: Any) -> NewLogRow:
    payload = orjson.dumps({"session_id": session, "hook_event_name": name, **body})
    return NewLogRow(f"h:{session}:{name}:{at}", "hook", name, payload, at, session, "hook")


def user(session: str, uuid: str, ts: str, text: str = "hi") -> dict[str, Any]:
    return {"type": "user", "sessionId": session, "uuid": uuid, "timestamp": ts, "cwd": "/w",
            "message": {"role": "user", "content": text}}  # fmt: skip


def titles(store: Store) -> dict[str, tuple[Any, Any]]:
    return {str(r[0]): (r[1], r[2]) for r in store.rows("SELECT id, title, title_source FROM sessions")}


def test_each_precedence_step(store: Store) -> None:
    def case(n: int, kinds: int, with_hook: bool) -> list[NewLogRow]:
        a = sid("a", n)
        recs = [
            {"type": "summary", "summary": "Summarised", "leafUuid": f"a1-{n}"},
            user(a, f"a1-{n}", "2026-01-01T00:00:00.000Z"),
            {"type": "ai-title", "aiTitle": "Generated", "sessionId": a},
            {"type": "custom-title", "customTitle": "Mine", "sessionId": a},
        ]
        hooks = [hook(a, "SessionStart", "2026-01-01T00:00:05.000Z", session_title="Hook name")] if with_hook else []
        return main_file(a, recs[:kinds]) + hooks

    cases = [
        (case(0, 4, True), ("Mine", "custom-title")),
        (case(1, 3, True), ("Hook name", "session_title")),
        (case(2, 3, False), ("Generated", "ai-title")),
        (case(3, 2, False), ("Summarised", "summary")),
        (main_file(sid("a", 4), [user(sid("a", 4), "a1", "2026-01-01T00:00:00.000Z")]), (None, None)),
    ]
    store.log([r for rows, _ in cases for r in rows])
    got = titles(store)
    assert [got[sid("a", n)] for n in range(len(cases))] == [want for _, want in cases]


def test_the_latest_of_a_kind_wins_in_any_arrival_order(store: Store) -> None:
    def lines(a: str, custom: bool = True) -> list[NewLogRow]:
        recs = [
            user(a, "a1", "2026-01-01T00:00:00.000Z"),
            {"type": "custom-title", "customTitle": "Zeta, renamed first", "sessionId": a},
            {"type": "ai-title", "aiTitle": "Zz generated first", "sessionId": a},
            {"type": "custom-title", "customTitle": "Alpha, renamed last", "sessionId": a},
            {"type": "ai-title", "aiTitle": "Aa generated last", "sessionId": a},
        ]
        return main_file(a, [r for r in recs if custom or r["type"] != "custom-title"])

    reversed_rows = lines(sid("a", 1))[::-1]  # the place in the file decides, not the arrival
    store.log(lines(sid("a", 0)) + lines(sid("a", 2), custom=False) + reversed_rows[:1])
    for r in reversed_rows[1:]:
        store.log([r])
    got = titles(store)
    assert got[sid("a", 0)] == got[sid("a", 1)] == ("Alpha, renamed last", "custom-title")
    assert got[sid("a", 2)] == ("Aa generated last", "ai-title")


def resumed(n: int) -> list[NewLogRow]:
    """1.0.x resume: B's file starts with a summary of A, then A's history copied in (records naming
    A), then B's own records (as corpus/claude-projects/-Users-user-linear-agent/263940d8-….jsonl)."""
    a, b = sid("a", n), sid("b", n)
    own_a = main_file(a, [user(a, "a1", "2026-01-01T00:00:00.000Z")])
    b_file = main_file(
        b,
        [
            {"type": "summary", "summary": "What A did", "leafUuid": "a2"},
            user(a, "a1", "2026-01-01T00:00:00.000Z"),
            user(a, "a2", "2026-01-01T00:00:09.000Z", "bye"),
            {**user(b, "b1", "2026-01-02T00:00:00.000Z"), "parentUuid": "a2"},
        ],
    )
    return own_a + b_file


def test_a_summary_titles_the_session_its_leaf_belongs_to_in_every_order(store: Store) -> None:
    # every 7th of the 120 orders of the 5 rows: each row comes first and last in some of them
    orders = [o for k, o in enumerate(itertools.permutations(range(5))) if k % 7 == 0]
    cases = [resumed(n) for n in range(len(orders))]
    for step in range(5):  # delivery `step` carries each case's row at that place of its order
        store.log([rows[order[step]] for rows, order in zip(cases, orders, strict=True)])
    got = titles(store)
    for n, order in enumerate(orders):
        assert (got[sid("a", n)], got[sid("b", n)]) == (("What A did", "summary"), (None, None)), order
    assert store.replay_differs() == []


def test_a_summary_does_not_beat_the_leaf_sessions_own_title(store: Store) -> None:
    a = sid("a")
    store.log([*resumed(0), *main_file(a, [{"type": "ai-title", "aiTitle": "A's own", "sessionId": a}])])
    assert titles(store) == {a: ("A's own", "ai-title"), sid("b"): (None, None)}


def test_of_a_sessions_own_summaries_the_latest_leaf_wins(store: Store) -> None:
    def rows(a: str, keep: slice) -> list[NewLogRow]:
        recs = [
            {"type": "summary", "summary": "Later point", "leafUuid": "a3"},
            {"type": "summary", "summary": "Earlier point", "leafUuid": "a1"},
            user(a, "a1", "2026-01-01T00:00:00.000Z"),
            user(a, "a3", "2026-01-01T00:00:30.000Z"),
        ]
        return main_file(a, recs[keep])

    store.log(rows(sid("a", 0), slice(None)) + rows(sid("a", 1), slice(1, 3)))
    assert titles(store) == {sid("a", 0): ("Later point", "summary"), sid("a", 1): ("Earlier point", "summary")}


@pytest.mark.parametrize("leaf", ["not-in-this-file", "b1"])
def test_a_summary_whose_leaf_is_not_in_its_file_titles_nothing(store: Store, leaf: str) -> None:
    # "b1" is a record of another file: the leaf is looked up in the summary's own file only
    a, b = sid("a"), sid("b")
    other = main_file(b, [user(b, "b1", "2026-01-02T00:00:00.000Z")])
    rows = main_file(a, [{"type": "summary", "summary": "Elsewhere", "leafUuid": leaf},
                         user(a, "a1", "2026-01-01T00:00:00.000Z")])  # fmt: skip
    store.log(rows + other)
    assert titles(store) == {a: (None, None), b: (None, None)}


def test_a_summary_joins_its_leaf_delivered_before_or_after_it(store: Store) -> None:
    """One row per delivery: a summary whose leaf comes two deliveries later, one whose leaf came
    before, and one whose leaf is in no record of the file."""
    a, b = sid("a"), sid("b")  # A's file continues B's conversation (its summary and records copied in)
    recs = [
        {"type": "summary", "summary": "Planning the MVP", "leafUuid": "leaf-b"},
        user(b, "first-b", "2025-08-24T19:00:00.000Z", "hello"),
        user(b, "leaf-b", "2025-08-24T19:26:27.994Z", "and more"),
        user(a, "first-a", "2025-08-25T08:00:00.000Z", "continue"),
        {"type": "summary", "summary": "Names no record here", "leafUuid": "elsewhere"},
        {"type": "summary", "summary": "Continuing", "leafUuid": "first-a"},
    ]
    for r in main_file(a, recs):
        store.log([r])
    assert titles(store) == {a: ("Continuing", "summary"), b: ("Planning the MVP", "summary")}


@pytest.mark.parametrize("per_read", [64, 2])
def test_a_files_summaries_find_their_leaves_in_one_read_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per_read: int
) -> None:
    """Local store: the leaves of every summary of one file in a batch are looked for in one read
    of the file's log rows (``LEAVES_PER_READ`` leaves a read), not one read per summary."""
    monkeypatch.setattr(store_titles, "LEAVES_PER_READ", per_read)
    a = sid("a")
    leaves = ["a1", "a2", "a3"]
    recs: list[dict[str, Any]] = [{"type": "summary", "summary": f"Up to {u}", "leafUuid": u} for u in leaves]
    recs += [user(a, u, f"2026-01-01T00:00:0{i}.000Z") for i, u in enumerate(leaves)]
    conn = connect(tmp_path / "x.db")
    migrate(conn)
    with statements(conn, "instr(payload") as reads:
        apply_batch(conn, main_file(a, recs))
    assert len(reads) == -(-len(leaves) // per_read)
    assert conn.execute("SELECT title, title_source FROM sessions WHERE id = ?", (a,)).fetchall() == [
        ("Up to a3", "summary")
    ]
    assert sorted(conn.execute("SELECT leaf_uuid, leaf_session FROM summaries").fetchall()) == [(u, a) for u in leaves]
