"""A transcript line's key kept as 8 bytes and rebuilt exactly (``logrows.line_check``, migration
0030); every other key kept as text."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestd.core.keys import jsonl_key, jsonl_key_of_digest, origin_hash, reset_key
from ingestd.core.records import NewLogRow
from ingestd.store import logrows
from ingestd.store.connection import connect, write_txn
from ingestd.store.migrate import migrate
from ingestd.store.upsert import utc_ms_sql

origins = st.sampled_from(["p/a.jsonl", "p/b.jsonl", "p/a.jsonl.bak", "p/é.jsonl", "hook"])
gens = st.sampled_from([0, 1, 2, 10, 11, 100])


@given(origins, gens, st.integers(0, 2**52), st.binary(max_size=40))
def test_a_line_key_is_kept_as_its_check_and_rebuilt_from_it(origin: str, gen: int, offset: int, line: bytes) -> None:
    oh = origin_hash(origin)
    key = jsonl_key(oh, gen, offset, line)
    check = logrows.line_check(key, oh, gen, offset)
    assert check is not None and len(check) == 8
    assert f"j:{oh}:{gen}:{offset:012x}:{check.hex()}" == key


def test_any_other_key_is_kept_as_text() -> None:
    oh = origin_hash("p/a.jsonl")
    line = jsonl_key(oh, 0, 10, b"{}")
    for key, gen, offset in (
        (line, 0, 11),  # another offset than its own
        (line, 1, 10),  # another generation
        (jsonl_key(origin_hash("p/b.jsonl"), 0, 10, b"{}"), 0, 10),  # another file's hash
        (line[:-16] + line[-16:].upper(), 0, 10),  # not the lowercase hex the view writes
        (line, 0, None),  # no offset
        (reset_key(oh, 0), 0, 0),
        (f"q:{line}", 0, 10),
        ("h:k:0123456789abcdef", 0, None),
        (jsonl_key_of_digest(oh, 0, 10, "0" * 15 + "g"), 0, 10),
    ):
        assert logrows.line_check(key, oh, gen, offset) is None, key


_row = st.tuples(
    origins,
    gens,
    st.integers(0, 2**40),
    st.binary(min_size=1, max_size=20),  # a line read is never empty
    st.sampled_from(["jsonl", "hook", "ingestd"]),
    st.sampled_from([None, "s-1", "s-2"]),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(_row, min_size=1, max_size=12))
def test_the_log_gives_back_every_column_as_appended(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, int, int, bytes, str, str | None]]
) -> None:
    tmp = tmp_path_factory.mktemp("log")
    conn = connect(tmp / "l.db")
    migrate(conn)
    new = []
    places = set()
    for origin, gen, offset, line, source, sid in rows:
        if source == "jsonl" and (origin, gen, offset) in places:
            continue  # one line per place of a file in one read
        places.add((origin, gen, offset))
        oh = origin_hash(origin)
        if source == "jsonl":
            key, off = jsonl_key(oh, gen, offset, line), offset
        else:
            key, off = f"h:x:{oh}:{gen}:{offset}:{line.hex()}", None
        new.append(NewLogRow(key, source, "t", line, "2026-01-01T00:00:00.000Z", sid, origin, gen, off))
    got, n = write_txn(conn, lambda c: logrows.append(c, new))
    unique = {}
    for r in new:
        unique.setdefault(r.idempotency_key, r)  # the first row of a key is the one kept
    assert n == len(unique) == len(got)
    back = {
        r[1]: r
        for r in conn.execute(
            "SELECT id, idempotency_key, source, session_id, origin, origin_gen, origin_offset FROM events_raw"
        )
    }
    assert set(back) == set(unique)
    for key, r in unique.items():
        assert back[key][1:] == (key, r.source, r.session_id, r.origin, r.origin_gen, r.origin_offset)
        assert back[key][0] == got[key]
    again, n2 = write_txn(conn, lambda c: logrows.append(c, new))
    assert n2 == 0 and again == {}
    conn.close()


_times = st.one_of(
    st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)).map(
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"
    ),
    st.sampled_from(
        [
            "1969-12-31T23:59:59.999Z",
            "2026-02-30T00:00:00.000Z",
            "2026-01-01T00:00:00.000+01:00",
            "now",
            "",
            "2026-12-03T09:58:03.\u0669\u0660\u0668Z",  # Arabic-Indic digits: the text, not 908 ms
            "2026-12-03T09:58:03.\uff19\uff10\uff18Z",  # full-width digits
            "2026-12-03T\u0660\u0669:58:03.908Z",
        ]
    ),
    st.text(max_size=30),
)


@settings(max_examples=200, deadline=None)
@given(_times)
def test_a_receipt_time_reads_back_as_it_was_appended(at: str) -> None:
    kept = logrows.received_ms(at)
    assert isinstance(kept, int) or kept == at
    conn = connect(":memory:")
    migrate(conn)
    write_txn(conn, lambda c: logrows.append(c, [NewLogRow("h:t", "hook", "Stop", b"{}", at, "s", "hook")]))
    assert conn.execute("SELECT received_at FROM events_raw").fetchall() == [(at,)]
    assert conn.execute("SELECT typeof(received) FROM log_rows").fetchall() == [
        ("integer" if isinstance(kept, int) else "text",)
    ]


def test_a_canonical_time_is_kept_as_milliseconds() -> None:
    assert logrows.received_ms("1970-01-01T00:00:00.001Z") == 1
    assert logrows.received_ms("2026-12-03T09:58:03.908Z") == 1796291883908
    assert logrows.received_ms("2026-12-03T09:58:03.908+00:00") == "2026-12-03T09:58:03.908+00:00"


def test_a_line_is_checked_against_the_hash_its_origin_was_stored_with(tmp_path: Path) -> None:
    conn = connect(tmp_path / "h.db")
    migrate(conn)
    # an origin stored with another hash than origin_hash gives: the view rebuilds keys from the stored one
    conn.execute("INSERT INTO log_origins (origin, hash) VALUES ('p/a.jsonl', '00000000000000aa')")
    key = jsonl_key("00000000000000aa", 0, 5, b"{}")
    row = NewLogRow(key, "jsonl", "user", b"{}", "2026-01-01T00:00:00.000Z", "s", "p/a.jsonl", 0, 5)
    write_txn(conn, lambda c: logrows.append(c, [row]))
    assert conn.execute("SELECT idempotency_key FROM events_raw").fetchall() == [(key,)]
    assert conn.execute("SELECT key IS NULL FROM log_rows").fetchall() == [(1,)]
    conn.close()


@settings(max_examples=300, deadline=None)
@given(_times)
def test_the_compact_projections_keep_a_time_as_the_log_keeps_a_receipt_time(at: str) -> None:
    # one rule in two places: logrows.received_ms in Python for the log, upsert.utc_ms_sql in SQL for
    # search documents and tool calls; the views spell both back
    conn = connect(":memory:")
    got = conn.execute(f"SELECT {utc_ms_sql('?1')}", (at,)).fetchall()[0][0]
    assert got == logrows.received_ms(at)
