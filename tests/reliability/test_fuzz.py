"""Property-based fuzzing of both parsers (SPEC §12): no exception escapes, nothing stored changes.

- The hook endpoint, in process (aiohttp test client, the real writer thread and database):
  any body (bytes, JSON of any shape, hook-like objects with fields of any type, damaged
  copies of real-looking bodies) gets 200, 400 or 413, never a 500; a 200 stores the body
  verbatim; the log rows stored before it never change.
- The transcript parser: arbitrary bytes, chunked arbitrarily, through framing, decoding,
  the projector fold and the store (``apply_batch``): never raises; earlier log rows unchanged.
- At the end, a replay of each fuzzed database equals its live projections.

The quick versions run in ``make test``; ``make reliability`` runs many more examples.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestd.core import hookkeys, projector
from ingestd.core.framing import Framer
from ingestd.core.keys import short_hash
from ingestd.core.records import LogRow, line_row, path_info
from ingestd.core.touch import Ctx
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import assemble
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.payload import register_sql
from ingestd.store.writer import FoldCache, apply_batch
from tests.reliability.support import assert_replay_ok

QUICK = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))

EVENTS = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "PermissionDenied",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "Notification",
    "PreCompact",
    "PostCompact",
    "StopFailure",
    "TeammateIdle",
]
HOOK_FIELDS = [
    "tool_use_id",
    "tool_name",
    "tool_input",
    "tool_response",
    "agent_id",
    "agent_type",
    "agent_transcript_path",
    "transcript_path",
    "cwd",
    "reason",
    "prompt",
    "error",
    "trigger",
    "source",
    "permission_mode",
    "message",
    "stop_hook_active",
    "last_assistant_message",
    "model",
]
RECORD_KINDS = ["user", "assistant", "system", "progress", "summary", "queue-operation", "attachment", "x"]
RECORD_FIELDS = [
    "uuid",
    "parentUuid",
    "sessionId",
    "timestamp",
    "cwd",
    "agentId",
    "isSidechain",
    "requestId",
    "message",
    "toolUseResult",
    "subtype",
    "compactMetadata",
    "data",
    "operation",
    "content",
    "summary",
    "version",
]

# JSON values of any shape, big and odd numbers and lone surrogates included.
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**62, max_value=2**70)
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(["\ud800", "a\udc9d", "toolu_1", "a1", "2026-01-01T00:00:00.000Z", "Task", "Agent"])
)
values = st.recursive(
    scalars,
    lambda c: (
        st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8) | st.sampled_from(RECORD_FIELDS), c, max_size=4)
    ),
    max_leaves=12,
)
usage = st.dictionaries(
    st.sampled_from(
        ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation"]
    ),
    values | st.integers(min_value=-5, max_value=2**66),
    max_size=5,
)
message = st.fixed_dictionaries(
    {},
    optional={
        "id": st.sampled_from(["msg_a", "msg_b"]) | values,
        "model": st.sampled_from(["claude-opus-4-6", "<synthetic>"]) | values,
        "usage": usage | values,
        "content": st.lists(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["text", "tool_use", "tool_result"])},
                optional={"id": values, "name": values, "input": values, "tool_use_id": values, "is_error": values},
            ),
            max_size=3,
        )
        | values,
    },
)
records = st.fixed_dictionaries(
    {"type": st.sampled_from(RECORD_KINDS) | values},
    optional={**{f: values for f in RECORD_FIELDS}, "message": message, "sessionId": st.sampled_from(["s-1", "s-2"])},
)
hook_objects = st.fixed_dictionaries(
    {"hook_event_name": st.sampled_from(EVENTS) | values, "session_id": st.sampled_from(["s-1", "s-2"]) | values},
    optional={f: values for f in HOOK_FIELDS},
)


def dumps(v: Any) -> bytes:
    # json (not orjson): writes big ints, NaN and lone surrogates (as \\udXXX escapes)
    return json.dumps(v).encode()


@st.composite
def damaged(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(0, 3))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "cut", "insert"]))
        if op == "flip":
            data[i] = draw(st.integers(0, 255))
        elif op == "cut":
            del data[i:]
        else:
            data[i:i] = draw(st.binary(min_size=1, max_size=4))
    return bytes(data)


hook_bodies = st.binary(max_size=300) | values.map(dumps) | hook_objects.map(dumps) | damaged(hook_objects.map(dumps))
transcript_bytes = (
    st.binary(max_size=300)
    | st.lists(records.map(dumps) | values.map(dumps) | st.binary(max_size=40), max_size=6).map(
        lambda ls: b"\n".join(ls) + b"\n"
    )
    | damaged(st.lists(records.map(dumps), max_size=4).map(lambda ls: b"\n".join(ls) + b"\n"))
)


def log_digest(conn: apsw.Connection, upto: int) -> str:
    h = hashlib.blake2b()
    for row in conn.execute("SELECT * FROM events_raw WHERE id <= ? ORDER BY id", (upto,)):
        h.update(repr(row).encode())
    return h.hexdigest()


def max_id(conn: apsw.Connection) -> int:
    v: Any = conn.execute("SELECT coalesce(max(id), 0) FROM events_raw").fetchall()[0][0]
    return int(v)


# -- the hook endpoint ---------------------------------------------------------------------


class HookHarness:
    """One app on one database for a whole fuzz run, driven from sync hypothesis tests."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.loop = asyncio.new_event_loop()
        cfg = ServeConfig(db_path=db, tail=False, schedule=False, watchdog_interval_s=3600)
        self.client: TestClient[Any, Any] = TestClient(TestServer(assemble(cfg)), loop=self.loop)
        self.loop.run_until_complete(self.client.start_server())
        self.reader = connect(db, readonly=True)
        register_sql(self.reader)
        self.stored = 0  # bodies answered 200 and appended to the log (not redeliveries)

    def post(self, body: bytes, content_type: str) -> tuple[int, bytes]:
        async def go() -> tuple[int, bytes]:
            resp = await self.client.post("/hooks", data=body, headers={"Content-Type": content_type})
            return resp.status, await resp.read()

        return self.loop.run_until_complete(go())

    def close(self) -> None:
        self.reader.close()
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HookHarness]:
    h = HookHarness(tmp_path_factory.mktemp("fuzz-hooks") / "h.db")
    yield h
    h.close()
    assert_replay_ok(h.db, tmp_path_factory.mktemp("fuzz-hooks-replay"))


def check_hook(h: HookHarness, body: bytes, content_type: str) -> None:
    upto = max_id(h.reader)
    before = log_digest(h.reader, upto)
    status, text = h.post(body, content_type)
    if content_type.split(";")[0].strip().lower() != "application/json":
        assert status == 415, (status, text[:200])  # only JSON is taken, whatever the body (SPEC §10)
    else:
        assert status in (200, 400, 413), (status, text[:200])
    got = h.reader.execute(
        "SELECT payload_bytes(codec, payload), source FROM events_raw WHERE id > ?", (upto,)
    ).fetchall()
    if status == 200:
        assert text == b""
        if got == []:  # a redelivery: an event with the same natural key is already stored
            parsed = hookkeys.parse_body(body)
            assert isinstance(parsed, hookkeys.HookEvent)
            key = hookkeys.idempotency_key(parsed, header_key=None, received_ns=0, instance="-", counter=0)
            assert key.startswith(("h:t:", "h:a:", "h:b:"))
            assert h.reader.execute("SELECT count(*) FROM events_raw WHERE idempotency_key = ?", (key,)).fetchall() == [
                (1,)
            ]
        else:
            assert [(bytes(p), s) for p, s in got] == [(body, "hook")]
            h.stored += 1
    else:
        assert got == []
    assert log_digest(h.reader, upto) == before


def fuzz_hooks(h: HookHarness, profile: settings) -> None:
    """Run ``check_hook`` on fuzzed bodies; some must take the stored path, or it went unchecked."""
    stored = h.stored

    @profile
    @given(
        body=hook_bodies,
        content_type=st.sampled_from(
            ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "text/plain", ""]
        ),
    )
    def run(body: bytes, content_type: str) -> None:
        check_hook(h, body, content_type)

    run()
    assert h.stored > stored, "no fuzzed body was stored: the accepted path was never checked"


def test_fuzz_hook_endpoint(hooks: HookHarness) -> None:
    fuzz_hooks(hooks, QUICK)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fuzz_hook_endpoint_long(hooks: HookHarness) -> None:
    fuzz_hooks(hooks, LONG)


# -- the transcript parser -------------------------------------------------------------------


# drawing these nested records costs far more than folding them: the quick run folds 40 lists,
# the long one (make reliability) 2000
FOLD_QUICK = settings(QUICK, max_examples=40)


def fold_arbitrary_records(profile: settings) -> None:
    """Fold lists of arbitrary (mostly malformed) records: the projector never raises."""

    @profile
    @given(st.lists(records | values, max_size=8))
    def fold(objs: list[Any]) -> None:
        rows = [
            LogRow(
                i + 1,
                "jsonl",
                str(o.get("type")) if isinstance(o, dict) else "invalid",
                dumps(o),
                "2026-01-01T00:00:00.000Z",
                "s-1",
                "p/s-1.jsonl",
                0,
                i * 100,
            )
            for i, o in enumerate(objs)
        ]
        projector.fold_log("s-1", rows, Ctx())

    fold()


def test_fold_never_raises_on_arbitrary_records() -> None:
    fold_arbitrary_records(FOLD_QUICK)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fold_never_raises_on_arbitrary_records_long() -> None:
    fold_arbitrary_records(LONG)


class StoreHarness:
    def __init__(self, db: Path) -> None:
        self.db = db
        self.conn = connect(db)
        register_sql(self.conn)
        migrate(self.conn)
        self.files = itertools.count()
        self.cache = FoldCache()  # as the daemon keeps one: each example costs its own rows only


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreHarness]:
    s = StoreHarness(tmp_path_factory.mktemp("fuzz-store") / "t.db")
    yield s
    s.conn.close()
    assert_replay_ok(s.db, tmp_path_factory.mktemp("fuzz-store-replay"))


def same_session(data: bytes, session: str) -> bytes:
    """A subagent file whose records all name its own session (see the test below)."""
    out = []
    for ln in data.split(b"\n"):
        try:
            o = orjson.loads(ln)
        except orjson.JSONDecodeError:
            out.append(ln)
            continue
        if isinstance(o, dict) and "sessionId" in o:
            o["sessionId"] = session
            ln = orjson.dumps(o)
        out.append(ln)
    return b"\n".join(out)


def test_subagent_file_naming_two_sessions_projects_in_any_order(tmp_path: Path) -> None:
    # Found by the fuzzer: a subagent file under s-3/ whose records name s-2 (and one that names
    # none, so it belongs to the path's session) makes agent a1 an agent of both sessions; the
    # agents upsert keeps the session that saw it first (then the smaller id), in any fold order.
    origin = "-p/s-3/subagents/agent-a1.jsonl"
    data = dumps({"type": "user", "sessionId": "s-2"}) + b"\n" + dumps({"type": "user"}) + b"\n"
    lines = Framer(0).feed(data)
    rows = [
        line_row(ln, origin=origin, origin_hash="h", gen=0, received_at="2026-01-01T00:00:00.000Z", path_session="s-3")
        for ln in lines
    ]
    got = []
    for order in (rows, rows[::-1]):
        conn = connect(tmp_path / f"o{len(got)}.db")
        migrate(conn)
        for r in order:
            apply_batch(conn, [r])
        got.append(conn.execute("SELECT id, session_id FROM agents ORDER BY id").fetchall())
        conn.close()
    assert got[0] == got[1] == [("a1", "s-2"), ("a1", "s-3")]


def reference_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, bytes) of each complete non-blank line (``\\n`` or ``\\r\\n`` ended), spelled plainly."""
    out: list[tuple[int, bytes]] = []
    offset = 0
    for seg in data.split(b"\n")[:-1]:
        body = seg.removesuffix(b"\r")
        if body.strip(b" \t\n\r\x0b\x0c"):
            out.append((offset, body))
        offset += len(seg) + 1
    return out


def check_transcript(s: StoreHarness, data: bytes, cuts: list[int], session: str) -> None:
    n = next(s.files)  # a new file per example (one file, one session's main transcript or a subagent's)
    origin = f"-p{n}/{session}.jsonl" if n % 2 else f"-p/{session}/subagents/agent-a{n}.jsonl"
    if not n % 2:
        data = same_session(data, session)
    oh = short_hash(origin.encode())
    framer = Framer(0)
    lines = []
    prev = 0
    for c in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        lines += framer.feed(data[prev:c])
        prev = c
    assert framer.offset + framer.pending == len(data)
    assert [(ln.offset, ln.data) for ln in lines] == reference_lines(data)  # no line lost or split by a cut
    rows = [
        line_row(
            ln,
            origin=origin,
            origin_hash=oh,
            gen=0,
            received_at="2026-01-01T00:00:00.000Z",
            path_session=path_info(origin).session_id,
        )
        for ln in lines
    ]
    upto = max_id(s.conn)
    before = log_digest(s.conn, upto)
    res = apply_batch(s.conn, rows, cache=s.cache)
    assert res.inserted == len({r.idempotency_key for r in rows})
    assert log_digest(s.conn, upto) == before
    # every complete line stored verbatim, in order, at its offset
    got = s.conn.execute(
        "SELECT payload_bytes(codec, payload), origin_offset FROM events_raw WHERE id > ? ORDER BY id", (upto,)
    ).fetchall()
    assert [(bytes(p), o) for p, o in got] == [(ln.data, ln.offset) for ln in lines]


TRANSCRIPT_CASES = given(
    data=transcript_bytes,
    cuts=st.lists(st.integers(0, 400), max_size=4),
    session=st.sampled_from(["s-1", "s-2", "s-3"]),
)


@settings(QUICK, max_examples=60)  # each example ingests into a store; the long twin runs 2000
@TRANSCRIPT_CASES
def test_fuzz_transcript_parser_and_store(store: StoreHarness, data: bytes, cuts: list[int], session: str) -> None:
    check_transcript(store, data, cuts, session)


@pytest.mark.slow
@pytest.mark.timeout(900)
@LONG
@TRANSCRIPT_CASES
def test_fuzz_transcript_parser_and_store_long(store: StoreHarness, data: bytes, cuts: list[int], session: str) -> None:
    check_transcript(store, data, cuts, session)
