"""Canonical UTC guards (SPEC §5.4): the triggers and ``timefmt.canonical`` agree."""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.timefmt import canonical
from ingestd.store.connection import Db

ACCEPTED = [
    ("2025-03-01T10:17:00.000Z", "2025-03-01T10:17:00.000Z"),
    ("2025-03-01T10:17:00Z", "2025-03-01T10:17:00.000Z"),
    ("2025-03-01T10:17:00.5Z", "2025-03-01T10:17:00.500Z"),
    ("2025-03-01T10:17Z", "2025-03-01T10:17:00.000Z"),
    ("2025-03-01 10:17:00Z", "2025-03-01T10:17:00.000Z"),
    ("2025-03-01T12:17:00+02:00", "2025-03-01T10:17:00.000Z"),
    ("2025-03-01T00:30:00-05:00", "2025-03-01T05:30:00.000Z"),
    ("2025-12-31T23:30:00-01:00", "2026-01-01T00:30:00.000Z"),
    ("2025-03-01", "2025-03-01T00:00:00.000Z"),
]
REJECTED = [
    "2025-03-01T10:17:00",  # naive: names no instant
    "2025-02-30",
    "2025-13-01T00:00:00Z",
    "yesterday",
    "",
    "2025-03-01T10:17:00+0200",
    "20250301",
]


def insert_usage(db: apsw.Connection, occurred_at: object, message_id: str = "m") -> None:
    db.execute(
        "INSERT INTO token_usage (session_id, message_id, model, bucket, tokens, occurred_at)"
        " VALUES ('s', ?, 'claude-opus-4-6', 'input', 1, ?)",
        (message_id, occurred_at),
    )


@pytest.mark.parametrize(("spelling", "canon"), ACCEPTED)
def test_accepted_spellings_are_canonicalised(db: apsw.Connection, spelling: str, canon: str) -> None:
    insert_usage(db, spelling)
    assert db.execute("SELECT occurred_at FROM token_usage").fetchall() == [(canon,)]
    assert canonical(spelling) == canon
    db.execute(
        "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
        " VALUES ('m-x', 'input', 1, ?, 'test')",
        (spelling,),
    )
    assert db.execute("SELECT effective_from FROM model_pricing WHERE model = 'm-x'").fetchall() == [(canon,)]


@pytest.mark.parametrize("spelling", [*REJECTED, 12345, None])
def test_rejected_spellings(db: apsw.Connection, spelling: object) -> None:
    with pytest.raises(apsw.ConstraintError):
        insert_usage(db, spelling)
    with pytest.raises(apsw.ConstraintError):
        db.execute(
            "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
            " VALUES ('m-x', 'input', 1, ?, 'test')",
            (spelling,),
        )
    assert canonical(spelling) is None


def test_update_is_guarded_too(db: apsw.Connection) -> None:
    insert_usage(db, "2025-03-01T10:17:00Z")
    with pytest.raises(apsw.ConstraintError):
        db.execute("UPDATE token_usage SET occurred_at = 'not a time'")
    db.execute("UPDATE token_usage SET occurred_at = '2025-03-01T11:17:00+01:00'")
    assert db.execute("SELECT occurred_at FROM token_usage").fetchall() == [("2025-03-01T10:17:00.000Z",)]


def test_two_spellings_of_one_instant_store_identically(db: apsw.Connection) -> None:
    insert_usage(db, "2025-03-01T12:17:00+02:00", "a")
    insert_usage(db, "2025-03-01T10:17:00.000Z", "b")
    rows = db.execute("SELECT DISTINCT occurred_at FROM token_usage").fetchall()
    assert rows == [("2025-03-01T10:17:00.000Z",)]


@given(
    st.datetimes(
        min_value=__import__("datetime").datetime(2000, 1, 1),
        max_value=__import__("datetime").datetime(2099, 1, 1),
    ),
    st.integers(min_value=-14 * 60, max_value=14 * 60),
)
def test_python_and_sql_agree(dt: object, offset_min: int) -> None:
    import datetime as _dt

    assert isinstance(dt, _dt.datetime)
    tz = _dt.timezone(_dt.timedelta(minutes=offset_min))
    spelled = dt.replace(tzinfo=tz).isoformat(timespec="milliseconds")
    conn = Db(":memory:")
    sql_canon = conn.execute("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?)", (spelled,)).fetchall()[0][0]
    assert canonical(spelled) == sql_canon
