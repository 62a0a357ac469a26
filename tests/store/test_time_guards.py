"""SQLite's own side of the time guards (SPEC §5.4): a value that is not text is refused (SQLite is
typeless, so its guard must; PostgreSQL's text columns refuse it before any guard), and SQLite's
``strftime`` agrees with ``timefmt.canonical``. The spellings both stores admit or refuse are the
contract suite's (``tests/stores/test_guards.py``)."""

from __future__ import annotations

import datetime as dt

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingestd.core.timefmt import canonical
from ingestd.store.connection import Db


@pytest.mark.parametrize("value", [12345, 1.5, b"2025-03-01"])
def test_a_time_that_is_not_text_is_refused(db: apsw.Connection, value: object) -> None:
    with pytest.raises(apsw.ConstraintError):
        db.execute(
            "INSERT INTO token_usage (session_id, message_id, model, input, occurred_at)"
            " VALUES ('s', 'm', 'claude-opus-4-6', 1, ?)",
            (value,),
        )
    with pytest.raises(apsw.ConstraintError):
        db.execute(
            "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source)"
            " VALUES ('m-x', 'input', 1, ?, 'test')",
            (value,),
        )
    assert canonical(value) is None


@given(
    st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2099, 1, 1)),
    st.integers(min_value=-14 * 60, max_value=14 * 60),
)
def test_python_and_sql_agree(when: dt.datetime, offset_min: int) -> None:
    tz = dt.timezone(dt.timedelta(minutes=offset_min))
    spelled = when.replace(tzinfo=tz).isoformat(timespec="milliseconds")
    conn = Db(":memory:")
    sql_canon = conn.execute("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?)", (spelled,)).fetchall()[0][0]
    assert canonical(spelled) == sql_canon
