"""Migration 0018: token_usage's one time trigger per statement kind does what 0002's two did (SPEC §5.4).

A second database carries 0002's four triggers on token_usage in place of 0018's two; the same
statements must store the same rows, the same rollup, and be refused alike.
"""

from __future__ import annotations

import re
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.store import rollup
from ingestd.store.connection import connect
from ingestd.store.migrate import MIGRATIONS_DIR, migrate

OLD_NAMES = ("token_usage_time_guard_insert", "token_usage_time_guard_update")
OLD_NAMES += ("token_usage_time_canon_insert", "token_usage_time_canon_update")
NEW_NAMES = ("token_usage_time_insert", "token_usage_time_update")


def _old_triggers() -> list[str]:
    """0002's four CREATE TRIGGER statements on token_usage's time, as released."""
    sql = (MIGRATIONS_DIR / "0002_time_guards_and_rollup.sql").read_text()
    found = re.findall(r"CREATE TRIGGER (token_usage_time_\w+) .*?\nEND;", sql, flags=re.S)
    stmts = re.findall(r"(CREATE TRIGGER token_usage_time_\w+ .*?\nEND;)", sql, flags=re.S)
    assert sorted(found) == sorted(OLD_NAMES)
    return stmts


def _pair(tmp_path: Path) -> tuple[apsw.Connection, apsw.Connection]:
    """(a migrated database, the same with 0002's time triggers instead of 0018's)."""
    new = connect(tmp_path / "new.db")
    migrate(new)
    old = connect(tmp_path / "old.db")
    migrate(old)
    with old:
        for name in NEW_NAMES:
            old.execute(f"DROP TRIGGER {name}")
        for stmt in _old_triggers():
            old.execute(stmt)
    return new, old


def _triggers(conn: apsw.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'token_usage'")
    return {str(n) for (n,) in rows if str(n).startswith("token_usage_time")}


def test_the_migration_leaves_one_time_trigger_per_kind(conn: apsw.Connection) -> None:
    assert _triggers(conn) == set(NEW_NAMES)


SPELLINGS = [
    "2025-03-01T10:17:00.000Z",
    "2025-03-01T10:17:00Z",
    "2025-03-01T12:17:00+02:00",
    "2025-03-01",
    "2025-03-01 10:17:00Z",
    "2025-03-01T10:14:59.999Z",
    "2025-03-01T10:17:00",
    "2025-02-30",
    "2025-02-30T00:00:00.000Z",
    "yesterday",
    "",
    "2025-03-01T10:17:00+0200",
    "12345",
    "2460000.5",
]
VALUE = st.one_of(
    st.sampled_from(SPELLINGS),
    st.integers(-10, 3_000_000),
    st.text(alphabet="0123456789-:TZ+. ", max_size=26),
    st.builds(lambda s, t: s[:t], st.sampled_from(SPELLINGS), st.integers(0, 26)),
)
STATEMENT = st.tuples(st.sampled_from(["insert", "upsert", "update"]), st.integers(0, 3), VALUE)

UPSERT = (
    "INSERT INTO token_usage (session_id, message_id, model, input, occurred_at)"
    " VALUES ('s', ?, 'claude-opus-4-6', 5, ?)"
    " ON CONFLICT (message_id) DO UPDATE SET occurred_at = excluded.occurred_at, input = input + 1"
)


def _run(conn: apsw.Connection, kind: str, m: int, value: object) -> str:
    """The statement's outcome: 'ok' or the refusal's class."""
    try:
        if kind == "insert":
            conn.execute(
                "INSERT INTO token_usage (session_id, message_id, model, input, occurred_at)"
                " VALUES ('s', ?, 'claude-opus-4-6', 5, ?)",
                (f"m{m}", value),
            )
        elif kind == "upsert":
            conn.execute(UPSERT, (f"m{m}", value))
        else:
            conn.execute("UPDATE token_usage SET occurred_at = ? WHERE message_id = ?", (value, f"m{m}"))
    except apsw.ConstraintError:
        return "refused"
    return "ok"


def _state(conn: apsw.Connection) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    rows = conn.execute("SELECT id, message_id, input, occurred_at FROM token_usage ORDER BY id").fetchall()
    return rows, sorted(conn.execute("SELECT * FROM token_usage_rollup").fetchall())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(STATEMENT, min_size=1, max_size=12))
def test_merged_trigger_agrees_with_the_two_it_replaces(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, object]]
) -> None:
    new, old = _pair(tmp_path_factory.mktemp("pair"))
    for kind, m, value in ops:
        assert _run(new, kind, m, value) == _run(old, kind, m, value), (kind, m, value)
        assert _state(new) == _state(old)
    assert rollup.differences(new) == [] and rollup.differences(old) == []
    for (at,) in new.execute("SELECT occurred_at FROM token_usage"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", str(at))


def test_null_is_refused(conn: apsw.Connection) -> None:
    """A NULL occurred_at is refused by the time trigger and leaves no row."""
    with pytest.raises(apsw.ConstraintError):
        _run_raw(conn, None)
    assert conn.execute("SELECT count(*) FROM token_usage").fetchall() == [(0,)]


def _run_raw(conn: apsw.Connection, value: object) -> None:
    conn.execute(
        "INSERT INTO token_usage (session_id, message_id, model, input, occurred_at)"
        " VALUES ('s', 'm', 'claude-opus-4-6', 5, ?)",
        (value,),
    )


def test_a_refused_time_undoes_the_whole_statement(conn: apsw.Connection) -> None:
    """An AFTER trigger's RAISE(ABORT) rolls back the statement's rows written before it, as the
    BEFORE guard refused them first."""
    with pytest.raises(apsw.ConstraintError, match="must be a date or a zoned ISO-8601 instant"):
        conn.execute(
            "INSERT INTO token_usage (session_id, message_id, model, input, occurred_at)"
            " VALUES ('s', 'a', 'claude-opus-4-6', 5, '2025-03-01T10:00:00+01:00'),"
            " ('s', 'b', 'claude-opus-4-6', 5, 'not a time')"
        )
    assert conn.execute("SELECT count(*) FROM token_usage").fetchall() == [(0,)]
    assert conn.execute("SELECT count(*) FROM token_usage_rollup").fetchall() == [(0,)]
