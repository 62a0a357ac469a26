"""POST /hooks end to end through a real writer and a real database.

Most tests inject ``apply`` (failures and stalls on demand); the tests marked ``WRITERS`` run once
with that and once with the daemon's own, ``hookwriter.make_apply``."""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from aiohttp.test_utils import TestClient

from ingestd.core.decode import decoded_bytes
from ingestd.core.records import NewLogRow
from ingestd.daemon import hookwriter
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.root import WRITER, assemble
from ingestd.http.hooks import HookConfig
from ingestd.store.connection import connect
from ingestd.store.payload import register_sql
from tests.hookclient import JSON_HEADERS, first_of_each_event

Client = TestClient[Any, Any]
MakeClient = Callable[..., Awaitable[Client]]
CORPUS_HOOKS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "hooks"

ERROR_KEYS = {"status", "code", "message"}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ingestd.db"


# the receiver behind the writer with an injected ``apply`` (``store_rows``), or with the daemon's own
WRITERS = pytest.mark.parametrize("hook_writer", ["thread", "default"])


@pytest.fixture
def make_client(aiohttp_client: Any, db: Path) -> MakeClient:
    async def make(hook_writer: str = "thread", **kw: Any) -> Client:
        apply = kw.pop("apply", hookwriter.store_rows) if hook_writer == "thread" else None
        cfg = ServeConfig(db_path=db, tail=False, schedule=False, watchdog_interval_s=3600, **kw)
        app = assemble(cfg, apply=apply)
        client: Client = await aiohttp_client(app, headers=JSON_HEADERS)
        return client

    return make


def stuck_writer() -> tuple[threading.Event, threading.Event, Any]:
    """``(entered, release, apply)``: an ``apply`` that sets ``entered`` and holds its transaction
    until ``release`` (10 s at most), then stores the rows."""
    entered, release = threading.Event(), threading.Event()

    def stuck(conn: apsw.Connection, batch: Sequence[NewLogRow]) -> int:
        entered.set()
        release.wait(10)
        return hookwriter.store_rows(conn, batch)

    return entered, release, stuck


def rows(
    db: Path,
    sql: str = "SELECT idempotency_key, source, event_type, payload_bytes(codec, payload), session_id, origin"
    " FROM events_raw",
) -> list[Any]:
    conn = connect(db, readonly=True)
    register_sql(conn)  # payload_bytes(codec, payload): the bytes as read
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def body(**kw: Any) -> bytes:
    return orjson.dumps({"hook_event_name": "Stop", "session_id": "s1", **kw})


async def assert_error(resp: Any, status: int, code: str) -> None:
    assert resp.status == status
    assert resp.content_type == "application/json"
    doc = await resp.json()
    assert set(doc) == {"error"}
    assert set(doc["error"]) == ERROR_KEYS
    assert doc["error"]["status"] == status
    assert doc["error"]["code"] == code


async def test_a_bom_and_a_lone_surrogate_together_are_accepted(make_client: MakeClient, db: Path) -> None:
    # each is taken alone; together (the lenient pass after the BOM) the body is still a hook
    client = await make_client()
    payload = b'\xef\xbb\xbf{"hook_event_name":"Stop","session_id":"s1","t":"\\ud800"}'
    resp = await client.post("/hooks", data=payload, headers={"Content-Type": "application/json"})
    assert resp.status == 200, await resp.text()
    assert [bytes(r[3]) for r in rows(db)] == [payload]


@WRITERS
async def test_accepted_delivery_is_committed_before_an_empty_200(
    make_client: MakeClient, db: Path, hook_writer: str
) -> None:
    client = await make_client(hook_writer)
    payload = b'{"hook_event_name":"Stop","session_id":"s1","stop_hook_active":false,"zz":{"new":1}}'
    resp = await client.post("/hooks", data=payload, headers={"Content-Type": "application/json"})
    assert resp.status == 200
    assert await resp.read() == b""
    got = rows(db)
    assert len(got) == 1
    key, source, event_type, stored, session_id, origin = got[0]
    assert (source, event_type, session_id, origin) == ("hook", "Stop", "s1", "hook")
    assert bytes(stored) == payload  # verbatim, unknown keys included
    assert key.startswith("h:r:")
    (received_at,) = rows(db, "SELECT received_at FROM events_raw")[0]
    assert received_at.endswith("Z") and len(received_at) == 24
    assert rows(db, "SELECT session_id, event_type FROM events") == [("s1", "Stop")]


async def test_hook_alias_path_works(make_client: MakeClient, db: Path) -> None:
    client = await make_client()
    assert (await client.post("/hook", data=body())).status == 200
    assert len(rows(db)) == 1


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"", "empty_body"),
        (b"{oops", "invalid_json"),
        # Regression: valid JSON the decoder cannot take apart is said for what it is
        (b'{"hook_event_name":"Stop","session_id":"s","x":' + b"[" * 1100 + b"]" * 1100 + b"}", "too_deep"),
        (b'{"hook_event_name":"Stop","session_id":"s","x":' + b"7" * 5000 + b"}", "number_too_large"),
        (b"[]", "not_an_object"),
        (b'{"session_id":"s"}', "missing_hook_event_name"),
        (b'{"hook_event_name":"Stop"}', "missing_session_id"),
        (b'{"hook_event_name":"Stop","session_id":7}', "missing_session_id"),
        # blank: no session can be reached by it (ids are stripped when looked up), as in transcripts
        (b'{"hook_event_name":"Stop","session_id":""}', "missing_session_id"),
        (b'{"hook_event_name":"Stop","session_id":"   "}', "missing_session_id"),
        (b'{"hook_event_name":"Stop","session_id":"\\t\\n "}', "missing_session_id"),
        # not JSON (RFC 8259): refused, not stored verbatim as if it were
        (b'{"hook_event_name":"Stop","session_id":"s","x":NaN}', "invalid_json"),
        (b'{"hook_event_name":"Stop","session_id":"s","x":-Infinity}', "invalid_json"),
        # after a BOM and a lone surrogate (both taken alone), NaN is still refused
        (b'\xef\xbb\xbf{"hook_event_name":"Stop","session_id":"s","t":"\\ud800","x":NaN}', "invalid_json"),
        (b'{"hook_event_name":"Stop","session_id":"s","x":[1,Infinity]}', "invalid_json"),
        # the lenient pass (a lone surrogate) must not let NaN through either
        (b'{"hook_event_name":"Stop","session_id":"s","p":"\\udc9d","x":NaN}', "invalid_json"),
    ],
)
async def test_400_with_reason_and_nothing_written(
    make_client: MakeClient, db: Path, payload: bytes, code: str
) -> None:
    client = await make_client()
    await assert_error(await client.post("/hooks", data=payload), 400, code)
    assert rows(db) == []
    assert rows(db, "SELECT * FROM events") == []


async def test_bad_idempotency_header_is_400(make_client: MakeClient, db: Path) -> None:
    client = await make_client()
    resp = await client.post("/hooks", data=body(), headers={"Idempotency-Key": "x" * 500})
    await assert_error(resp, 400, "bad_idempotency_key")
    assert rows(db) == []


async def test_413_over_the_limit_and_nothing_written(make_client: MakeClient, db: Path) -> None:
    client = await make_client(hooks=HookConfig(max_body_bytes=1000))
    big = body(prompt="x" * 2000)
    await assert_error(await client.post("/hooks", data=big), 413, "body_too_large")

    async def chunks() -> Any:  # no Content-Length: the streamed size is checked too
        yield big

    await assert_error(await client.post("/hooks", data=chunks()), 413, "body_too_large")

    async def one_over() -> Any:  # streamed, exactly max + 1 bytes: under aiohttp's own cap
        yield b" " * 1001

    await assert_error(await client.post("/hooks", data=one_over()), 413, "body_too_large")
    assert (await client.post("/hooks", data=body(prompt="x" * 100))).status == 200
    assert len(rows(db)) == 1


async def test_default_limit_is_one_mib(make_client: MakeClient, db: Path) -> None:
    client = await make_client()
    pad = (1 << 20) - len(body(p=""))
    ok = await client.post("/hooks", data=io.BytesIO(body(p="x" * pad)))
    assert ok.status == 200
    over = await client.post("/hooks", data=io.BytesIO(body(p="x" * (pad + 1))))
    await assert_error(over, 413, "body_too_large")
    assert len(rows(db)) == 1


@WRITERS
async def test_401_when_token_configured(make_client: MakeClient, db: Path, hook_writer: str) -> None:
    client = await make_client(hook_writer, token="s3cret-token")
    await assert_error(await client.post("/hooks", data=body()), 401, "unauthorized")
    resp = await client.post("/hooks", data=body(), headers={"Authorization": "Bearer wrong"})
    await assert_error(resp, 401, "unauthorized")
    assert rows(db) == []
    ok = await client.post("/hooks", data=body(), headers={"Authorization": "Bearer s3cret-token"})
    assert ok.status == 200
    ok2 = await client.post("/hooks", data=body(), headers={"X-Ingestd-Token": "s3cret-token"})
    assert ok2.status == 200
    assert len(rows(db)) == 2


async def test_500_fixed_body_when_the_database_refuses(make_client: MakeClient, db: Path) -> None:
    def refusing(conn: apsw.Connection, batch: Sequence[NewLogRow]) -> int:
        # The log row goes in, then the projection write is refused: all must roll back.
        conn.execute(
            "CREATE TEMP TRIGGER IF NOT EXISTS refuse BEFORE INSERT ON main.events"
            " BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
        return hookwriter.store_rows(conn, batch)

    client = await make_client(apply=refusing)
    r1 = await client.post("/hooks", data=body())
    r2 = await client.post("/hooks", data=body())
    await assert_error(r1, 500, "storage_error")
    assert await r1.read() == await r2.read()  # fixed body
    assert rows(db) == []
    assert rows(db, "SELECT * FROM events") == []


async def test_slow_database_answers_503_quickly(make_client: MakeClient, db: Path) -> None:
    _, release, stuck = stuck_writer()
    client = await make_client(apply=stuck, hooks=HookConfig(hook_timeout_ms=100))
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await assert_error(await client.post("/hooks", data=body()), 503, "timeout")
    assert loop.time() - t0 < 2
    release.set()


async def test_errors_share_one_shape(make_client: MakeClient) -> None:
    client = await make_client()
    await assert_error(await client.get("/nowhere"), 404, "not_found")
    resp = await client.get("/hooks")
    assert resp.headers["Allow"] == "POST"
    await assert_error(resp, 405, "method_not_allowed")


@WRITERS
async def test_redeliveries_converge_and_genuine_firings_do_not_collapse(
    make_client: MakeClient, db: Path, hook_writer: str
) -> None:
    client = await make_client(hook_writer)
    tool = body(hook_event_name="PreToolUse", tool_use_id="toolu_1", tool_name="Bash")
    sub = body(hook_event_name="SubagentStop", agent_id="a1", agent_type="Explore")
    for payload, headers in [
        (tool, {}),
        (tool, {}),
        (sub, {}),
        (sub, {}),
        (body(n=1), {"Idempotency-Key": "retry-1"}),
        (body(n=1), {"Idempotency-Key": "retry-1"}),  # a retry of the same event
        (body(), {}),  # two byte-identical Stops: two firings
        (body(), {}),
    ]:
        assert (await client.post("/hooks", data=payload, headers=headers)).status == 200
    types = sorted(r[0] for r in rows(db, "SELECT event_type FROM events_raw"))
    assert types == ["PreToolUse", "Stop", "Stop", "Stop", "SubagentStop"]
    assert len(rows(db, "SELECT * FROM events")) == 5


@WRITERS
async def test_a_client_key_reused_for_another_event_is_409_and_the_first_kept(
    make_client: MakeClient, db: Path, hook_writer: str
) -> None:
    # SPEC §3 "same key, same event": a different body under a used key is provably not a
    # redelivery; answering 200 lost it silently
    client = await make_client(hook_writer)
    first = body(session_id="s2")
    other = body(hook_event_name="Notification", session_id="s3", message="x")
    key = {"Idempotency-Key": "same1"}
    assert (await client.post("/hooks", data=first, headers=key)).status == 200
    resp = await client.post("/hooks", data=other, headers=key)
    await assert_error(resp, 409, "idempotency_key_reused")
    assert "same1" in (await resp.json())["error"]["message"]
    # the same event re-serialised (other spacing, other key order) is still a retry
    respaced = b'{ "session_id": "s2",  "hook_event_name": "Stop" }'
    for again in (first, respaced):
        assert (await client.post("/hooks", data=again, headers=key)).status == 200
    assert [(r[2], bytes(r[3])) for r in rows(db)] == [("Stop", first)]
    # without the header the other body is an event of its own
    assert (await client.post("/hooks", data=other)).status == 200
    assert sorted(r[2] for r in rows(db)) == ["Notification", "Stop"]


async def test_unknown_event_is_stored(make_client: MakeClient, db: Path) -> None:
    client = await make_client()
    payload = body(hook_event_name="TeammateIdle", teammate={"id": "x"})
    assert (await client.post("/hooks", data=payload)).status == 200
    [(_, _, event_type, stored, _, _)] = rows(db)
    assert event_type == "TeammateIdle"
    assert orjson.loads(bytes(stored))["teammate"] == {"id": "x"}


@WRITERS
async def test_concurrent_clients_every_2xx_exactly_once(make_client: MakeClient, db: Path, hook_writer: str) -> None:
    client = await make_client(hook_writer)
    n_clients, per_client = 32, 40

    async def one_client(c: int) -> list[str]:
        acked = []
        for i in range(per_client):
            tuid = f"toolu_{c}_{i}"
            payload = body(hook_event_name="PostToolUse", tool_use_id=tuid)
            resp = await client.post("/hooks", data=payload)
            if resp.status == 200:
                acked.append(tuid)
        return acked

    acked = [t for got in await asyncio.gather(*(one_client(c) for c in range(n_clients))) for t in got]
    assert len(acked) == n_clients * per_client
    stored = [
        orjson.loads(bytes(p))["tool_use_id"]
        for (p,) in rows(db, "SELECT payload_bytes(codec, payload) FROM events_raw")
    ]
    assert sorted(stored) == sorted(acked)
    (batches,) = rows(db, "SELECT count(*) FROM events_raw")[0:1]
    assert batches[0] == len(acked)


@pytest.mark.corpus
async def test_every_real_payload_is_accepted_and_projected(make_client: MakeClient, db: Path) -> None:
    if not CORPUS_HOOKS.is_dir():
        pytest.skip(f"{CORPUS_HOOKS} absent")
    client = await make_client()

    async def deliver(f: Path) -> int:
        """One capture file's deliveries in order; the files at once, like sessions running side
        by side (their commits share the daemon's write transactions)."""
        sent = 0
        for line in f.read_bytes().splitlines():
            if not line.strip():
                continue
            resp = await client.post("/hooks", data=line, headers={"Content-Type": "application/json"})
            assert resp.status == 200, (f, await resp.text())
            assert await resp.read() == b""
            sent += 1
        return sent

    files = sorted(CORPUS_HOOKS.glob("*/*.jsonl"))
    n = sum(await asyncio.gather(*(deliver(f) for f in files)))
    assert n > 500
    stored = rows(db, "SELECT count(*) FROM events_raw")[0][0]
    events = rows(db, "SELECT count(*) FROM events")[0][0]
    lines = [ln for f in files for ln in f.read_bytes().splitlines() if ln.strip()]
    assert stored == len(first_of_each_event(lines))  # every delivery, a redelivered event once
    assert events == stored  # every logged hook has its identifier-only events row
    assert rows(db, "SELECT count(*) FROM tool_calls")[0][0] > 50
    assert rows(db, "SELECT count(*) FROM agents WHERE type = 'subagent'")[0][0] > 0
    assert rows(db, "SELECT count(*) FROM sessions")[0][0] >= 7


async def _tool_state(make_client: MakeClient, db: Path, deliveries: list[bytes], hook_writer: str) -> list[Any]:
    client = await make_client(hook_writer)
    for d in deliveries:
        assert (await client.post("/hooks", data=d)).status == 200
    await client.close()
    return rows(db, "SELECT session_id, tool_use_id, agent_id, tool_name, status FROM tool_calls ORDER BY 2")


@pytest.mark.parametrize(
    ("order", "hook_writer"),
    [
        ("in_order", "thread"),
        ("reversed", "thread"),
        ("duplicated", "thread"),
        ("post_only_then_pre", "thread"),
        ("reversed", "default"),
        ("duplicated", "default"),
    ],
)
async def test_out_of_order_and_duplicate_deliveries_converge(
    make_client: MakeClient, db: Path, order: str, hook_writer: str
) -> None:
    pre = body(hook_event_name="PreToolUse", tool_use_id="toolu_9", tool_name="Bash", tool_input={})
    post = body(hook_event_name="PostToolUse", tool_use_id="toolu_9", tool_name="Bash", tool_response={})
    fail = body(hook_event_name="PostToolUseFailure", tool_use_id="toolu_8", tool_name="Read", error="x")
    pre8 = body(hook_event_name="PreToolUse", tool_use_id="toolu_8", tool_name="Read", tool_input={})
    seq = {
        "in_order": [pre, post, pre8, fail],
        "reversed": [fail, pre8, post, pre],
        "duplicated": [pre, pre, post, post, pre8, fail, fail, pre8],
        "post_only_then_pre": [post, fail, pre, pre8],
    }[order]
    got = await _tool_state(make_client, db, seq, hook_writer)
    assert got == [
        ("s1", "toolu_8", "s1", "Read", "failed"),
        ("s1", "toolu_9", "s1", "Bash", "completed"),
    ]


async def test_413_for_a_body_too_wide_to_decode_and_nothing_written(make_client: MakeClient, db: Path) -> None:
    # Regression: bytes under the cap can still decode into ~93 B per `{}`: 200k of them (600 KB)
    # would take ~19 MB per body in flight; the count of values is capped, not only the bytes
    client = await make_client()
    wide = body(p=[{}] * 200_000)
    assert len(wide) < (1 << 20)
    await assert_error(await client.post("/hooks", data=wide), 413, "body_too_wide")
    assert rows(db) == []
    # as many bytes of text (no values) are a normal delivery
    assert (await client.post("/hooks", data=body(p="x" * len(wide)))).status == 200


async def test_bodies_in_flight_share_one_decoding_budget(make_client: MakeClient, db: Path) -> None:
    # Regression: each body was checked alone (32 MiB of values), none against the others in flight:
    # 64 concurrent ~480 KB bodies of `{}` took 885 MB until their commit
    entered, release, stuck = stuck_writer()
    wide = body(p=[{}] * 50_000)
    cost = decoded_bytes(wide)
    client = await make_client(apply=stuck, hooks=HookConfig(max_decoded_bytes_in_flight=cost + cost // 2))
    first = asyncio.ensure_future(client.post("/hooks", data=wide))
    assert await asyncio.get_running_loop().run_in_executor(None, entered.wait, 5)
    busy = await client.post("/hooks", data=wide)  # the first is decoded and not committed yet
    await assert_error(busy, 503, "busy")
    assert busy.headers["Retry-After"] == "1"
    release.set()
    assert (await first).status == 200
    assert (await client.post("/hooks", data=wide)).status == 200  # its charge was given back
    assert len(rows(db)) == 2


async def test_a_large_body_is_counted_once(make_client: MakeClient, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a body over MAX_BODY_DECODED_BYTES / VALUE_BYTES (335 KB) was counted for its budget charge,
    # then again by decode_line's too_wide: four passes over its bytes each time
    from ingestd.core import decode

    counted: list[int] = []
    real = decode._structural

    def counting(data: bytes) -> int:
        counted.append(len(data))
        return real(data)

    monkeypatch.setattr(decode, "_structural", counting)
    client = await make_client()
    large = body(p="x" * 400_000)
    assert len(large) * decode.VALUE_BYTES > decode.MAX_BODY_DECODED_BYTES  # too_wide has to look
    assert (await client.post("/hooks", data=large)).status == 200
    assert counted == [len(large)]
    assert len(rows(db)) == 1


async def test_a_refused_body_gives_its_charge_back(make_client: MakeClient) -> None:
    # the writer refuses the row (its transaction failed): its charge must come back with the
    # answer, else every refusal would leak budget until each wide body is "busy" for good
    from ingestd.errors import StorageError

    def refuse(conn: apsw.Connection, batch: Sequence[NewLogRow]) -> int:
        raise StorageError("refused for the test")

    wide = body(p=[{}] * 50_000)
    cost = decoded_bytes(wide)
    client = await make_client(apply=refuse, hooks=HookConfig(max_decoded_bytes_in_flight=cost + cost // 2))
    for _ in range(3):
        await assert_error(await client.post("/hooks", data=wide), 500, "storage_error")


@WRITERS
async def test_a_body_a_stopped_writer_refuses_gives_its_charge_back(make_client: MakeClient, hook_writer: str) -> None:
    wide = body(p=[{}] * 50_000)
    cost = decoded_bytes(wide)
    client = await make_client(hook_writer, hooks=HookConfig(max_decoded_bytes_in_flight=cost + cost // 2))
    writer: Any = client.server.app[WRITER]
    writer._closed = True  # refused at the queue, as during shutdown
    try:
        for _ in range(3):
            await assert_error(await client.post("/hooks", data=wide), 503, "unavailable")
    finally:
        writer._closed = False  # the fixture's stop must still stop it


async def test_a_timed_out_body_keeps_its_charge_until_its_row_leaves_the_queue(
    make_client: MakeClient, db: Path
) -> None:
    # after a 503 timeout the row still waits in the writer's queue, decoded: its charge on the
    # in-flight budget was given back at the 503, so more wide bodies could pile up behind it
    entered, release, stuck = stuck_writer()
    wide = body(p=[{}] * 50_000)
    cost = decoded_bytes(wide)
    hooks = HookConfig(max_decoded_bytes_in_flight=cost + cost // 2, hook_timeout_ms=200)
    client = await make_client(apply=stuck, hooks=hooks)
    loop = asyncio.get_running_loop()
    await assert_error(await client.post("/hooks", data=wide), 503, "timeout")
    assert await loop.run_in_executor(None, entered.wait, 5)
    await assert_error(await client.post("/hooks", data=wide), 503, "busy")  # still charged
    release.set()
    deadline = loop.time() + 10
    while len(rows(db)) < 1 and loop.time() < deadline:
        await asyncio.sleep(0.01)
    assert len(rows(db)) == 1  # the timed-out row committed after all
    while (resp := await client.post("/hooks", data=wide)).status == 503 and loop.time() < deadline:
        await asyncio.sleep(0.01)  # the writer tells the loop just after its commit
    assert resp.status == 200  # its charge came back when its row left the queue
    assert len(rows(db)) == 2
