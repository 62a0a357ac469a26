"""What each store refuses at the last line of defence: a time that names no instant (the time
guards, SPEC §5.4, which store every admitted spelling canonically), and any change to the log
(append-only, SPEC §3)."""

from __future__ import annotations

import pytest

from ingestd.core.timefmt import canonical
from tests.stores.stores import Refused, Store

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
    None,
]
_USAGE = "INSERT INTO token_usage ({cols}) VALUES ({marks})"
_PRICE = (
    "INSERT INTO model_pricing (model, bucket, usd_per_mtok, effective_from, source) VALUES ('m-x', 'input', 1, ?, 't')"
)


def insert_usage(store: Store, occurred_at: object, message_id: str = "m") -> None:
    row = {
        **store.usage_columns(),
        "session_id": "s",
        "message_id": message_id,
        "model": "claude-opus-4-6",
        "input": 1,
        "occurred_at": occurred_at,
    }
    store.execute(_USAGE.format(cols=", ".join(row), marks=", ".join("?" * len(row))), list(row.values()))


def test_every_admitted_spelling_is_stored_canonically(store: Store) -> None:
    for n, (spelling, canon) in enumerate(ACCEPTED):
        assert canonical(spelling) == canon
        insert_usage(store, spelling, f"m{n}")
        assert store.rows("SELECT occurred_at FROM token_usage WHERE message_id = ?", (f"m{n}",)) == [(canon,)]
        store.execute(_PRICE, (spelling,))
        assert store.rows("SELECT effective_from FROM model_pricing WHERE model = 'm-x'") == [(canon,)]
        store.execute("DELETE FROM model_pricing WHERE model = 'm-x'")


@pytest.mark.parametrize("spelling", REJECTED)
def test_a_time_naming_no_instant_is_refused(store: Store, spelling: str | None) -> None:
    assert canonical(spelling) is None
    with pytest.raises(Refused):
        insert_usage(store, spelling)
    with pytest.raises(Refused):
        store.execute(_PRICE, (spelling,))
    assert store.rows("SELECT count(*) FROM token_usage") == [(0,)]


def test_an_update_is_guarded_too(store: Store) -> None:
    insert_usage(store, "2025-03-01T10:17:00Z")
    with pytest.raises(Refused):
        store.execute("UPDATE token_usage SET occurred_at = 'not a time'")
    store.execute("UPDATE token_usage SET occurred_at = '2025-03-01T11:17:00+01:00'")
    assert store.rows("SELECT occurred_at FROM token_usage") == [("2025-03-01T10:17:00.000Z",)]


def test_the_log_is_append_only(store: Store) -> None:
    from tests.stores.test_claims import _assistant, _lines

    store.log(_lines(_assistant("u1", "2026-05-01T10:00:00.000Z"), read_at="2026-05-01T10:00:01.000Z"))
    before = store.rows("SELECT id, event_type, payload FROM events_raw")
    assert len(before) == 1
    for sql, what in (("UPDATE events_raw SET event_type = 'x'", "updated"), ("DELETE FROM events_raw", "deleted")):
        with pytest.raises(Refused, match=f"append-only: rows are never {what}"):
            store.execute(sql)
    assert store.rows("SELECT id, event_type, payload FROM events_raw") == before
