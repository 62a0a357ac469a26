"""The claim rule on ``token_usage`` (SPEC §4.4, DESIGN.md "token_usage across sessions").

One message's usage may be evidenced in several sessions (a resumed session's copy, a subagent's
``agent_progress`` copy); each session's fold emits its best claim and the store keeps the better
one whatever order the sessions are written in: higher ``claim_rank``, then the earlier
``occurred_at``, then the smaller session id. A session's own claim of the same rank replaces its
earlier one, so an inferred time that moves later (``ingestd.core.validate``) moves the row too.
The numbers are not the winner's alone: each bucket is the maximum over every copy written, so a
partial copy in one file never beats the final one in another, in any order.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.core.derive import Changes
from ingestd.core.framing import Framer
from ingestd.core.keys import short_hash
from ingestd.core.records import NewLogRow, line_row
from ingestd.core.rows import TokenUsageRow
from ingestd.core.state import claim_order
from tests.stores.stores import Store

TIMES = ["2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z", "2026-01-01T00:00:02.000Z"]
_examples = itertools.count()


def _claim(mid: str, sid: str, rank: int, at: str, tokens: int) -> Changes:
    return Changes(
        token_usage=[TokenUsageRow(None, sid, sid, mid, "claude-x", 0, tokens, 0, 0, 0, 0, at, rank, 0, "", 0, "")]
    )


def _stored(store: Store, mid: str) -> list[tuple[Any, ...]]:
    return store.rows(
        "SELECT session_id, claim_rank, occurred_at, output FROM token_usage WHERE message_id = ?", (mid,)
    )


# (session 0-2, rank step, time step): each session's successive claims never get worse (a fold's
# best claim only improves as its evidence grows: a higher rank, or the same rank at an earlier time)
_claims = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_claims)
def test_the_better_claim_wins_in_any_order(store: Store, claims: list[tuple[int, int, int]]) -> None:
    n = next(_examples)
    mid = f"msg-{n}"
    current: dict[str, tuple[int, str, int]] = {}
    for k, (s, rank, t) in enumerate(claims):
        sid = f"s{s}-{n}"
        if sid in current:  # never worse than this session's claim before it
            old_rank, old_at, _ = current[sid]
            rank, at = (old_rank, min(old_at, TIMES[t])) if rank <= old_rank else (rank, TIMES[t])
        else:
            at = TIMES[t]
        current[sid] = (rank, at, 100 + k)
        store.write(_claim(mid, sid, rank, at, 100 + k), sid=sid)
    best = min(current.items(), key=lambda kv: claim_order(kv[1][0], kv[1][1], kv[0]))
    # the owner by the claim rule; the output the largest of every copy (100 + the last k)
    assert _stored(store, mid) == [(best[0], best[1][0], best[1][1], 100 + len(claims) - 1)]


def test_a_sessions_own_claim_of_the_same_rank_replaces_its_earlier_one(store: Store) -> None:
    """Later too: the claim is the session's current best, not a competitor to beat."""
    for at in (TIMES[1], TIMES[2], TIMES[0]):
        store.write(_claim("m", "s", 2, at, 7), sid="s")
        assert _stored(store, "m") == [("s", 2, at, 7)]
    store.write(_claim("m", "t", 2, TIMES[1], 8), sid="t")  # another session's later claim loses
    assert _stored(store, "m") == [("s", 2, TIMES[0], 8)]  # the owner stays; its larger output counts
    store.write(_claim("m", "t", 2, TIMES[0], 8), sid="t")  # an equal one: the smaller session id
    assert _stored(store, "m") == [("s", 2, TIMES[0], 8)]


SID = "5e55a1d0-0000-4000-8000-000000000001"
ORIGIN = f"-w/{SID}.jsonl"


def _lines(*objs: dict[str, Any], read_at: str, start: int = 0) -> list[NewLogRow]:
    """The transcript lines ``objs`` of session ``SID``'s file from byte ``start``, read at ``read_at``."""
    data = b"".join(orjson.dumps({"sessionId": SID, "cwd": "/w", **o}) + b"\n" for o in objs)
    oh = short_hash(ORIGIN.encode())
    return [
        line_row(ln, origin=ORIGIN, origin_hash=oh, gen=0, received_at=read_at, path_session=SID)
        for ln in Framer(start).feed(data)
    ]


def _assistant(uuid: str, ts: str) -> dict[str, Any]:
    usage = {"input_tokens": 3, "output_tokens": 5}
    msg = {"id": "msg_r", "role": "assistant", "model": "claude-x", "usage": usage, "content": []}
    return {"type": "assistant", "uuid": uuid, "timestamp": ts, "message": msg}


def _user(uuid: str, ts: str) -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "timestamp": ts, "message": {"role": "user", "content": "hi"}}


def _occurred(store: Store) -> set[str]:
    return {str(r[0]) for r in store.rows("SELECT occurred_at FROM token_usage WHERE message_id = 'msg_r'")}


def test_an_undated_message_takes_the_first_valid_time_its_file_gets(store: Store) -> None:
    """A message whose timestamp is refused, alone in its file, is undated (never dated at its read
    time: its usage would be billed on the ingest day); a later line, written after that read,
    gives the file its first valid time, later than the read: the message takes it, live as in a
    rebuild."""
    first = _lines(_assistant("u1", "not a time"), read_at="2026-05-01T11:00:00.000Z")
    store.log(first)
    assert _occurred(store) == set()
    start = len(first[0].payload) + 1
    store.log(_lines(_user("u2", "2026-05-01T12:00:00.000Z"), read_at="2026-05-01T12:00:01.000Z", start=start))
    assert _occurred(store) == {"2026-05-01T12:00:00.000Z"}
    assert store.replay_differs() == []


def test_an_inferred_time_needing_a_refold_comes_from_the_first_record(store: Store) -> None:
    """The file's first record is folded before the fold knows the file needs its timestamp index;
    the second record's refused timestamp then asks for a refold, which finds the first record's
    time: the message is dated T1, not at its read time."""
    t1 = "2026-05-01T10:00:00.000Z"
    store.log(_lines(_user("u1", t1), _assistant("u2", "not a time"), read_at="2026-06-01T00:00:00.000Z"))
    assert _occurred(store) == {t1}
