"""A record without a timestamp, or with a refused one (SPEC §5.4, §5.2), on both stores.

It takes the time of the records beside it in its file (the nearest dated one before it by byte
offset, else the nearest after), never the time its line was read, and it never moves its
session's last activity; its usage is billed on that day. With no dated record in its file it is
undated: its usage is in no bucket and every cost answer says so (``uncounted``, with the reason),
until a dated record joins it. A timestamp present but refused (not an instant, or after the line
was read) follows the same rule: never the read time. The records are a real corpus line (``corpus_records``) and a copy
of it as another call with its ``timestamp`` removed.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.core.framing import Framer
from ingestd.core.keys import short_hash
from ingestd.core.records import line_row
from ingestd.core.uncounted import USAGE_NOT_COUNTED
from ingestd.core.validate import INFERRED_DETAIL, UNDATED_USAGE
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, resolve_zone
from tests.stores.corpus_records import OPUS_46_COST, opus_46_record
from tests.stores.stores import Store

SID = "491e126e-1e71-469c-ade2-fcc8af567c74"
ORIGIN = f"-home-user-projects-spotter/{SID}.jsonl"
ALL = Window(None, None)
UTC = resolve_zone("UTC", {})
READ_AT = "2026-03-20T00:00:00.000Z"  # five weeks after the record: never a time of it
DATED_AT = "2026-02-10T21:55:43.858Z"  # the corpus record's own timestamp


def _dated() -> dict[str, Any]:
    return opus_46_record()


def _untimed() -> dict[str, Any]:
    """The corpus record as the next call (its own ids), its ``timestamp`` removed."""
    rec = opus_46_record()
    del rec["timestamp"]
    rec["message"]["id"] = "msg_0179FgGtJzf3MkRAWS4a4tbG"
    rec["requestId"] = "req_011CY18jHAewmXYczL1WUztJ"
    rec["uuid"] = "5a870ee3-92dd-48a0-9e23-b50e820810b1"
    rec["parentUuid"] = "5a870ee3-92dd-48a0-9e23-b50e820810ae"
    return rec


def _log(store: Store, recs: list[dict[str, Any]]) -> None:
    """The file holding ``recs`` in order, logged whole (lines logged before insert nothing)."""
    data = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    oh = short_hash(ORIGIN.encode())
    store.log(
        [
            line_row(ln, origin=ORIGIN, origin_hash=oh, gen=0, received_at=READ_AT, path_session=SID)
            for ln in Framer(0).feed(data)
        ]
    )


def _usage(store: Store) -> list[tuple[Any, ...]]:
    return store.rows("SELECT message_id, occurred_at FROM token_usage ORDER BY message_id")


def _last_activity(store: Store) -> Any:
    return store.rows("SELECT started_at, last_activity_at FROM sessions WHERE id = ?", (SID,))[0]


def test_a_record_without_a_timestamp_takes_the_time_of_the_record_before_it(store: Store) -> None:
    _log(store, [_dated(), _untimed()])
    assert _usage(store) == [("msg_0179FgGtJzf3MkRAWS4a4tbE", DATED_AT), ("msg_0179FgGtJzf3MkRAWS4a4tbG", DATED_AT)]
    assert _last_activity(store) == (DATED_AT, DATED_AT)  # not the read time
    by_day = cost_report(store.reader, by="day", window=ALL, zone=UTC)
    # both calls on the record's day: 2 x (1*5 + 472*25 + 34,903*0.5 + 762*10) / 10**6 = $0.073753
    assert [(r["day"], Decimal(r["cost_usd"])) for r in by_day["rows"]] == [("2026-02-10", 2 * Decimal(OPUS_46_COST))]
    assert by_day["cost_complete"] is True
    assert store.rows("SELECT reason, detail FROM quarantine") == [("timestamp", INFERRED_DETAIL)]
    assert store.replay_differs() == []


def test_before_any_dated_record_it_takes_the_time_of_the_one_after_it_in_any_order(store: Store) -> None:
    _log(store, [_untimed()])  # alone in its file so far: undated
    assert _usage(store) == []
    assert _last_activity(store) == (None, None)
    doc = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    assert doc["cost_complete"] is False and doc["uncounted"] == {"records": 1, "reasons": [UNDATED_USAGE]}
    assert Decimal(doc["cost_usd"]) == 0
    _log(store, [_untimed(), _dated()])  # a dated record joins the file after it
    assert _usage(store) == [("msg_0179FgGtJzf3MkRAWS4a4tbE", DATED_AT), ("msg_0179FgGtJzf3MkRAWS4a4tbG", DATED_AT)]
    assert _last_activity(store) == (DATED_AT, DATED_AT)
    doc = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    assert Decimal(doc["cost_usd"]) == 2 * Decimal(OPUS_46_COST) and doc["cost_complete"] is True
    assert doc["uncounted"]["records"] == 0
    assert store.rows("SELECT reason, detail FROM quarantine") == [("timestamp", INFERRED_DETAIL)]
    assert store.rollup_differences() == []
    assert store.replay_differs() == []


@pytest.mark.parametrize(
    ("stamp", "refused"),
    [
        ("2026-13-45T25:61:61.999Z", "is not an instant in 2000-2099"),
        ("2099-01-01T00:00:00.000Z", f"is after the line was read ({READ_AT})"),
    ],
    ids=["not-an-instant", "after-the-read"],
)
def test_a_refused_timestamp_in_a_file_with_no_valid_one_is_undated_never_at_the_read_time(
    store: Store, stamp: str, refused: str
) -> None:
    rec = _untimed()
    rec["timestamp"] = stamp
    _log(store, [rec])  # alone in its file so far: no time to infer, and the read time is none of its
    assert _usage(store) == []
    assert _last_activity(store) == (None, None)
    said = f"timestamp {stamp!r} {refused}, nor any record of its file: undated{USAGE_NOT_COUNTED}"
    assert store.rows("SELECT reason, detail FROM quarantine") == [("timestamp", said)]
    doc = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    assert doc["cost_complete"] is False and doc["uncounted"] == {"records": 1, "reasons": [said]}
    assert Decimal(doc["cost_usd"]) == 0
    _log(store, [rec, _dated()])  # a dated record joins the file after it: both on its day
    assert _usage(store) == [("msg_0179FgGtJzf3MkRAWS4a4tbE", DATED_AT), ("msg_0179FgGtJzf3MkRAWS4a4tbG", DATED_AT)]
    assert _last_activity(store) == (DATED_AT, DATED_AT)
    by_day = cost_report(store.reader, by="day", window=ALL, zone=UTC)
    # 2 x (1*5 + 472*25 + 34,903*0.5 + 762*10) / 10**6 = $0.073753, on the record's day
    assert [(r["day"], Decimal(r["cost_usd"])) for r in by_day["rows"]] == [("2026-02-10", 2 * Decimal(OPUS_46_COST))]
    assert by_day["cost_complete"] is True and by_day["uncounted"]["records"] == 0
    inferred = f"timestamp {stamp!r} {refused}: usage counted, occurred_at inferred"
    assert store.rows("SELECT reason, detail FROM quarantine") == [("timestamp", inferred)]
    assert store.rollup_differences() == []
    assert store.replay_differs() == []


_examples = itertools.count()  # the store lives across examples: each takes its own file


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.permutations(list(range(3))), st.integers(1, 3))
def test_the_inferred_times_are_the_same_in_any_order_and_batching(store: Store, order: list[int], size: int) -> None:
    n = next(_examples)
    sid = f"7a0c1d2e-0000-4000-8000-{n:012d}"
    origin = f"-home-user-projects-spotter/{sid}.jsonl"
    first, second = _untimed(), _untimed()
    second["message"]["id"], second["uuid"] = "msg_second", "5a870ee3-92dd-48a0-9e23-b50e820810b2"
    recs = [first, _dated(), second]
    for i, r in enumerate(recs):
        r["sessionId"] = sid
        r["message"]["id"] = f"{r['message']['id']}-{n}"
        r["requestId"] = f"{r['requestId']}-{i}"
    oh = short_hash(origin.encode())
    data = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    rows = [
        line_row(ln, origin=origin, origin_hash=oh, gen=0, received_at=READ_AT, path_session=sid)
        for ln in Framer(0).feed(data)
    ]
    shuffled = [rows[i] for i in order]
    for i in range(0, len(shuffled), size):
        store.log(shuffled[i : i + size])
    got = store.rows("SELECT occurred_at FROM token_usage WHERE session_id = ?", (sid,))
    # the one before it is dated for the second; none before the first, so the one after it
    assert got == [(DATED_AT,)] * 3
    assert store.rows("SELECT last_activity_at FROM sessions WHERE id = ?", (sid,)) == [(DATED_AT,)]


def test_a_message_whose_best_claim_becomes_undated_leaves_no_row_behind(store: Store) -> None:
    # corpus/claude-projects/-home-user-projects-spotter-worktrees-spotter-dov/4d5611e5-….jsonl: a
    # subagent's call is copied into the main file (an agent_progress record, dated) before its own
    # file's record arrives; that record, the best claim, has a refused timestamp and its file no
    # valid one: the message is undated, and the row the copy gave it goes, as a replay has none
    sid = "4d5611e5-241a-462a-8d15-5122611a9569"
    own = opus_46_record()
    own.update(sessionId=sid, isSidechain=True, agentId="a2898e3", timestamp="2026-13-45T25:61:61.999Z")
    inner = {k: own[k] for k in ("type", "message", "requestId", "uuid")} | {"timestamp": DATED_AT}
    copy = {
        "parentUuid": "ed207e1b-0ab4-422b-aff1-e5336fec5431",
        "isSidechain": False,
        "sessionId": sid,
        "type": "progress",
        "data": {"message": inner, "normalizedMessages": [], "type": "agent_progress", "agentId": "a2898e3"},
        "toolUseID": "agent_msg_01LkKqpUD829m724o5oSeN7M",
        "parentToolUseID": "toolu_017pLRuPHYTX5t99EnLyV53m",
        "uuid": "3939ab21-9370-43f3-b52a-0d62ae2ed5dc",
        "timestamp": DATED_AT,
    }
    main, sub = f"-home-user-projects-spotter-worktrees-spotter-dov/{sid}", "/subagents/agent-a2898e3.jsonl"
    for origin, rec in ((f"{main}.jsonl", copy), (f"{main}{sub}", own)):
        oh = short_hash(origin.encode())
        store.log(
            [
                line_row(ln, origin=origin, origin_hash=oh, gen=0, received_at=READ_AT, path_session=sid)
                for ln in Framer(0).feed(orjson.dumps(rec) + b"\n")
            ]
        )
    assert _usage(store) == []
    doc = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    assert doc["cost_complete"] is False and doc["uncounted"]["records"] == 1
    assert store.rollup_differences() == []
    assert store.replay_differs() == []
