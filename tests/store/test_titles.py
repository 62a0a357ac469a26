"""Session titles (SPEC §4.1, migration 0010, ``ingestd.store.titles``).

custom-title > a hook's session_title > ai-title > summary; the latest candidate of a kind wins;
a summary belongs to the session of the record its ``leafUuid`` names (found among the records of
the summary's own file), whatever order the rows arrive in, and a replay agrees.
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
from ingestd.projection.rebuild import rebuild_projections
from ingestd.store.writer import apply_batch
from tests.ingest.support import dump, new_db

A = "aaaaaaaa-0000-4000-8000-000000000001"  # the earlier session
B = "bbbbbbbb-0000-4000-8000-000000000002"  # resumed from A: its file starts with A's summary
READ = "2026-03-01T00:00:00.000Z"


def file_rows(origin: str, path_session: str, recs: list[dict[str, Any]]) -> list[NewLogRow]:
    data = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    oh = short_hash(origin.encode())
    return [
        line_row(ln, origin=origin, origin_hash=oh, gen=0, received_at=READ, path_session=path_session)
        for ln in Framer(0).feed(data)
    ]


def hook(sid: str, name: str, at: str, **body: Any) -> NewLogRow:
    payload = orjson.dumps({"session_id": sid, "hook_event_name": name, **body})
    return NewLogRow(f"h:{sid}:{name}:{at}", "hook", name, payload, at, sid, "hook")


def user(sid: str, uuid: str, ts: str, text: str = "hi") -> dict[str, Any]:
    return {"type": "user", "sessionId": sid, "uuid": uuid, "timestamp": ts, "cwd": "/w",
            "message": {"role": "user", "content": text}}  # fmt: skip


def titles(conn: Any) -> dict[str, tuple[Any, Any]]:
    return {str(r[0]): (r[1], r[2]) for r in conn.execute("SELECT id, title, title_source FROM sessions")}


def ingest(tmp_path: Path, rows: list[NewLogRow], name: str = "t") -> Any:
    conn = new_db(tmp_path / f"{name}.db")
    apply_batch(conn, rows)
    return conn


MAIN_A = f"-w/{A}.jsonl"


def test_each_precedence_step(tmp_path: Path) -> None:
    recs = [
        user(A, "a1", "2026-01-01T00:00:00.000Z"),
        {"type": "ai-title", "aiTitle": "Generated", "sessionId": A},
        {"type": "custom-title", "customTitle": "Mine", "sessionId": A},
    ]
    summary = {"type": "summary", "summary": "Summarised", "leafUuid": "a1"}
    name_hook = hook(A, "SessionStart", "2026-01-01T00:00:05.000Z", session_title="Hook name")
    cases = [
        ([summary, *recs], [name_hook], ("Mine", "custom-title")),
        ([summary, recs[0], recs[1]], [name_hook], ("Hook name", "session_title")),
        ([summary, recs[0], recs[1]], [], ("Generated", "ai-title")),
        ([summary, recs[0]], [], ("Summarised", "summary")),
        ([recs[0]], [], (None, None)),
    ]
    for n, (lines, hooks, want) in enumerate(cases):
        conn = ingest(tmp_path, file_rows(MAIN_A, A, lines) + hooks, f"p{n}")
        assert titles(conn)[A] == want, n


def test_latest_of_a_kind_wins(tmp_path: Path) -> None:
    lines = [
        user(A, "a1", "2026-01-01T00:00:00.000Z"),
        {"type": "custom-title", "customTitle": "Zeta, renamed first", "sessionId": A},
        {"type": "ai-title", "aiTitle": "Zz generated first", "sessionId": A},
        {"type": "custom-title", "customTitle": "Alpha, renamed last", "sessionId": A},
        {"type": "ai-title", "aiTitle": "Aa generated last", "sessionId": A},
    ]
    rows = file_rows(MAIN_A, A, lines)
    assert titles(ingest(tmp_path, rows))[A] == ("Alpha, renamed last", "custom-title")
    # in any arrival order (the place in the file decides, not the arrival)
    conn = new_db(tmp_path / "rev.db")
    for r in reversed(rows):
        apply_batch(conn, [r])
    assert titles(conn)[A] == ("Alpha, renamed last", "custom-title")
    no_custom = [r for r in rows if r.event_type != "custom-title"]
    assert titles(ingest(tmp_path, no_custom, "ai"))[A] == ("Aa generated last", "ai-title")


def resumed() -> list[NewLogRow]:
    """1.0.x resume: B's file starts with a summary of A, then A's history copied in (records naming
    A), then B's own records (as corpus/claude-projects/-Users-user-linear-agent/263940d8-….jsonl)."""
    own_a = file_rows(MAIN_A, A, [user(A, "a1", "2026-01-01T00:00:00.000Z")])
    b_file = file_rows(
        f"-w/{B}.jsonl",
        B,
        [
            {"type": "summary", "summary": "What A did", "leafUuid": "a2"},
            user(A, "a1", "2026-01-01T00:00:00.000Z"),
            user(A, "a2", "2026-01-01T00:00:09.000Z", "bye"),
            {**user(B, "b1", "2026-01-02T00:00:00.000Z"), "parentUuid": "a2"},
        ],
    )
    return own_a + b_file


def test_a_summary_titles_the_session_its_leaf_belongs_to_in_every_order(tmp_path: Path) -> None:
    rows = resumed()
    dumps = []
    for n, order in enumerate(itertools.permutations(range(len(rows)))):
        if n % 7:  # every 7th of the 120 orders: each row comes first and last in some of them
            continue
        conn = new_db(tmp_path / f"o{n}.db")
        for i in order:
            apply_batch(conn, [rows[i]])
        assert titles(conn) == {A: ("What A did", "summary"), B: (None, None)}, order
        dumps.append(dump(conn))
    assert all(d == dumps[0] for d in dumps)
    for origin_order in ("origin", "reverse"):
        dst = new_db(tmp_path / f"r-{origin_order}.db")
        rebuild_projections(conn, dst, batch_size=1, origin_order=origin_order)
        assert dump(dst) == dumps[0]


def test_a_summary_does_not_beat_the_leaf_sessions_own_title(tmp_path: Path) -> None:
    rows = [*resumed(), *file_rows(MAIN_A, A, [{"type": "ai-title", "aiTitle": "A's own", "sessionId": A}])]
    assert titles(ingest(tmp_path, rows)) == {A: ("A's own", "ai-title"), B: (None, None)}


def test_a_summary_of_its_own_session_and_the_latest_leaf_wins(tmp_path: Path) -> None:
    rows = file_rows(
        MAIN_A,
        A,
        [
            {"type": "summary", "summary": "Later point", "leafUuid": "a3"},
            {"type": "summary", "summary": "Earlier point", "leafUuid": "a1"},
            user(A, "a1", "2026-01-01T00:00:00.000Z"),
            user(A, "a3", "2026-01-01T00:00:30.000Z"),
        ],
    )
    assert titles(ingest(tmp_path, rows))[A] == ("Later point", "summary")
    assert titles(ingest(tmp_path, rows[1:3], "early"))[A] == ("Earlier point", "summary")


@pytest.mark.parametrize("leaf", ["not-in-this-file", "b1"])
def test_a_summary_whose_leaf_is_not_in_its_file_titles_nothing(tmp_path: Path, leaf: str) -> None:
    # "b1" is a record of another file: the leaf is looked up in the summary's own file only
    other = file_rows(f"-w/{B}.jsonl", B, [user(B, "b1", "2026-01-02T00:00:00.000Z")])
    rows = file_rows(MAIN_A, A, [{"type": "summary", "summary": "Elsewhere", "leafUuid": leaf},
                                 user(A, "a1", "2026-01-01T00:00:00.000Z")])  # fmt: skip
    assert titles(ingest(tmp_path, rows + other)) == {A: (None, None), B: (None, None)}
