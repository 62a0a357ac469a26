"""No input stops the pipeline (SPEC §12): the small inputs that once failed, each a test.

A record the database, the decoder or the framer cannot take is quarantined (its log row kept,
the reason listed by ``ingestd status`` with origin and offset), its sound tokens still count,
and the rest of its batch, file and root commits. ``replay`` agrees with what was stored live.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from structlog.testing import capture_logs

from ingestd.cli import cli
from ingestd.core.framing import Framer, Line, Oversized
from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from ingestd.ingest.backfill import ingest_roots
from ingestd.ingest.readfile import Tailing
from ingestd.report.status import status_report
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.core.folding import Incremental
from tests.reliability.support import assert_replay_ok, q
from tests.usage_rows import BY_BUCKET

SID = "11111111-1111-4111-8111-111111111111"
OTHER = "22222222-2222-4222-8222-222222222222"
BAD_TS = "2026-13-45T25:61:61.999Z"
NOW = "2026-02-01T00:00:00.000Z"
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "claude-projects"


def user(sid: str, uuid: str, ts: str) -> dict[str, Any]:
    return {
        "type": "user",
        "sessionId": sid,
        "uuid": uuid,
        "timestamp": ts,
        "message": {"role": "user", "content": "hi"},
    }


def asst(sid: str, mid: str, usage: Any, ts: Any, uuid: str | None = None) -> dict[str, Any]:
    msg = {"id": mid, "model": "claude-opus-4-6", "role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    return {
        "type": "assistant",
        "sessionId": sid,
        "uuid": uuid or f"u-{mid}",
        "timestamp": ts,
        "message": {**msg, "usage": usage},
    }


def jsonl(*records: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def bad_session(bad_ts: str = BAD_TS) -> bytes:
    """The issue's first small input: a user line, msg_1 with an impossible timestamp, msg_2."""
    return jsonl(
        user(SID, "u1", "2026-01-01T00:00:00.000Z"),
        asst(SID, "msg_1", {"input_tokens": 10, "output_tokens": 5}, bad_ts),
        asst(SID, "msg_2", {"input_tokens": 20, "output_tokens": 7}, "2026-01-01T00:00:09.000Z"),
    )


def totals(db: Path, sid: str) -> dict[str, int]:
    return {
        str(b): int(n)
        for b, n in q(db, f"SELECT bucket, sum(tokens) FROM {BY_BUCKET} WHERE session_id = ? GROUP BY 1", (sid,))
    }


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# a month 13; a year the guard refuses (its row was lost); a year that kept a session active forever;
# null (it was dated at read time, as if absent, with no quarantine row)
@pytest.mark.parametrize(
    "bad_ts", [BAD_TS, "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "1900-01-01T00:00:00Z", None]
)
def test_impossible_timestamp_is_quarantined_its_tokens_count_and_the_root_is_stored(
    tmp_path: Path, bad_ts: str | None
) -> None:
    root = tmp_path / "projects"
    (root / "-p").mkdir(parents=True)
    (root / "-q").mkdir()
    data = bad_session(bad_ts)
    (root / "-p" / f"{SID}.jsonl").write_bytes(data)
    (root / "-q" / f"{OTHER}.jsonl").write_bytes(
        jsonl(
            user(OTHER, "v1", "2026-01-02T00:00:00.000Z"),
            asst(OTHER, "msg_9", {"input_tokens": 3, "output_tokens": 4}, "2026-01-02T00:00:01.000Z"),
        )
    )
    db = tmp_path / "i.db"
    res = run_cli("ingest", "--db", str(db), "--projects", str(root), "--json")
    assert res.exit_code == 0, res.output
    doc = orjson.loads(res.stdout)
    assert doc["quarantined"] == {"timestamp": 1}
    got = totals(db, SID)
    assert (got["input"], got["output"]) == (30, 12)
    # the other project is fully stored
    assert totals(db, OTHER)["output"] == 4
    # msg_1's time is inferred from the nearest valid timestamp before it in the file
    assert q(db, "SELECT occurred_at FROM token_usage WHERE message_id = 'msg_1'") == [("2026-01-01T00:00:00.000Z",)]
    st = run_cli("status", "--db", str(db), "--no-stat", "--json")
    assert st.exit_code == 0
    quarantine = orjson.loads(st.stdout)["quarantine"]
    offset = data.index(b'{"type":"assistant"')
    assert quarantine["by_reason"] == {"timestamp": 1}
    [listed] = quarantine["listed"]
    assert (listed["reason"], listed["origin"], listed["origin_offset"]) == (
        "timestamp",
        f"-p/{SID}.jsonl",
        offset,
    )
    assert repr(bad_ts) in listed["detail"]
    human = run_cli("status", "--db", str(db), "--no-stat")
    assert "quarantined records: 1" in human.stdout
    rep = run_cli("replay", "--db", str(db), "--json")
    assert rep.exit_code == 0, rep.output
    orjson.loads(rep.stdout)


def test_an_old_transcripts_refused_line_does_not_make_its_session_active_now(tmp_path: Path) -> None:
    # read months after it was written, the refused line dated the session's activity at the read
    # time: `sessions` listed it first, "working", last active today; it is dated like its usage
    root = tmp_path / "projects"
    (root / "-p").mkdir(parents=True)
    (root / "-p" / f"{SID}.jsonl").write_bytes(bad_session() + jsonl(user(SID, "u9", "2099-01-01T00:00:00.000Z")))
    db = tmp_path / "old.db"
    assert run_cli("ingest", "--db", str(db), "--projects", str(root), "--json").exit_code == 0
    res = run_cli("sessions", "--db", str(db), "--json")
    [row] = orjson.loads(res.stdout)["rows"]
    assert (row["started_at"], row["last_activity_at"]) == ("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:09.000Z")
    assert row["status"] == "unknown"  # idle for the watchdog, as of the newest log row
    assert q(db, "SELECT reason FROM quarantine") == [("timestamp",), ("timestamp",)]
    rep = run_cli("replay", "--db", str(db), "--json")
    assert rep.exit_code == 0, rep.output


def _rows(data: bytes, origin: str = f"-p/{SID}.jsonl") -> list[LogRow]:
    from ingestd.core.framing import split_lines
    from ingestd.core.records import line_row

    lines, _ = split_lines(data)
    out = []
    for i, ln in enumerate(lines):
        r = line_row(ln, origin=origin, origin_hash="h", gen=0, received_at=NOW, path_session=SID)
        out.append(LogRow(i + 1, r.source, r.event_type, r.payload, NOW, r.session_id, origin, 0, ln.offset))
    return out


def _occurred(rows: list[LogRow], batches: list[list[int]]) -> dict[str, str]:
    inc = Incremental(SID)
    got: dict[str, str] = {}
    for b in batches:
        ch = inc([rows[i] for i in b])  # a refold, when one is needed, happens inside the fold
        got.update({r.message_id: r.occurred_at for r in ch.token_usage})
    return got


@pytest.mark.parametrize(
    "batches",
    [[[0, 1, 2, 3]], [[0], [1], [2], [3]], [[3], [2], [1], [0]], [[1, 3], [0, 2]], [[2], [0, 1, 3]]],
    ids=["one", "in-order", "reversed", "interleaved", "bad-last"],
)
def test_inferred_time_is_the_same_in_any_order_and_batching(batches: list[list[int]]) -> None:
    data = jsonl(
        asst(SID, "msg_0", {"output_tokens": 1}, BAD_TS, uuid="a0"),  # no valid time before it: the next one
        user(SID, "u1", "2026-01-01T00:00:05.000Z"),
        asst(SID, "msg_1", {"output_tokens": 2}, "not a time", uuid="a1"),  # the previous one
        asst(SID, "msg_2", {"output_tokens": 3}, "2026-01-01T00:00:09.000Z", uuid="a2"),
    )
    rows = _rows(data)
    assert _occurred(rows, batches) == {
        "msg_0": "2026-01-01T00:00:05.000Z",
        "msg_1": "2026-01-01T00:00:05.000Z",
        "msg_2": "2026-01-01T00:00:09.000Z",
    }


def test_a_file_with_no_valid_time_leaves_its_usage_undated_never_at_the_read_time() -> None:
    rows = _rows(jsonl(asst(SID, "msg_0", {"output_tokens": 1}, 12345)))
    assert _occurred(rows, [[0]]) == {}
    ch = Incremental(SID)(rows)
    assert [q.detail for q in ch.quarantine] == [
        "timestamp 12345 is not an instant in 2000-2099, nor any record of its file: undated"
        ", its usage not counted until a dated record joins it"
    ]


def test_counters_that_are_not_counts_quarantine_the_record_and_the_sound_buckets_count(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "-p").mkdir(parents=True)
    usage = b'{"input_tokens":-3,"output_tokens":7,"cache_read_input_tokens":1e400,"cache_creation_input_tokens":2.5}'
    line = jsonl(asst(SID, "msg_1", {"X": 1}, "2026-01-01T00:00:00.000Z")).replace(b'{"X":1}', usage)
    (root / "-p" / f"{SID}.jsonl").write_bytes(line)
    db = tmp_path / "t.db"
    conn = connect(db)
    migrate(conn)
    s = ingest_roots(conn, [root], now=NOW)
    assert s.quarantined == {"tokens": 1}
    assert totals(db, SID)["output"] == 7 and totals(db, SID)["input"] == 0
    [(detail,)] = q(db, "SELECT detail FROM quarantine WHERE reason = 'tokens'")
    assert "input_tokens = -3" in detail and "cache_creation_input_tokens = 2.5" in detail
    conn.close()
    assert_replay_ok(db, tmp_path)


def test_a_row_the_database_refuses_is_isolated_and_the_rest_commits(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "-p").mkdir(parents=True)
    poison = asst(SID, "msg_poison", {"input_tokens": 1, "output_tokens": 1}, "2026-01-01T00:00:02.000Z")
    (root / "-p" / f"{SID}.jsonl").write_bytes(
        jsonl(
            user(SID, "u1", "2026-01-01T00:00:00.000Z"),
            asst(SID, "msg_1", {"input_tokens": 10, "output_tokens": 5}, "2026-01-01T00:00:01.000Z"),
            poison,
            asst(SID, "msg_2", {"input_tokens": 20, "output_tokens": 7}, "2026-01-01T00:00:03.000Z"),
        )
    )
    db = tmp_path / "s.db"
    conn = connect(db)
    migrate(conn)
    # a refusal nobody foresaw: the database itself aborts one message's projection
    conn.execute(
        "CREATE TRIGGER poison BEFORE INSERT ON token_usage WHEN new.message_id = 'msg_poison'"
        " BEGIN SELECT RAISE(ABORT, 'poisoned row'); END"
    )
    s = ingest_roots(conn, [root], now=NOW)
    assert s.isolated == 1 and s.quarantined == {"storage": 1}
    got = totals(db, SID)
    assert (got["input"], got["output"]) == (30, 12)
    # the poison line is in the log, quarantined with the database's message, offset and origin
    [(rid, detail, origin)] = q(db, "SELECT raw_event_id, detail, origin FROM quarantine WHERE reason = 'storage'")
    assert "poisoned row" in detail and origin == f"-p/{SID}.jsonl"
    data = (root / "-p" / f"{SID}.jsonl").read_bytes()
    assert q(db, "SELECT origin_offset, event_type FROM events_raw WHERE id = ?", (rid,)) == [
        (data.index(b'"msg_poison"') - data[: data.index(b'"msg_poison"')][::-1].index(b"\n"), "assistant")
    ]
    # the checkpoint covers the whole file: a re-run reads nothing again and isolates nothing
    assert ingest_roots(conn, [root], now=NOW).isolated == 0
    conn.execute("DROP TRIGGER poison")
    conn.close()
    assert_replay_ok(db, tmp_path)


def test_transient_refusals_are_retried_and_shown_as_a_stall() -> None:
    from ingestd.errors import BusyError, StorageError
    from ingestd.http.health import Health
    from ingestd.store import writer
    from ingestd.store.writer import BatchResult

    calls: list[int] = []
    seen: list[list[dict[str, object]]] = []
    problems: list[list[str]] = []
    health = Health()

    def flaky() -> BatchResult:
        calls.append(1)
        if len(calls) < 3:
            raise StorageError("database error: disk I/O error", cause="IOError")
        return BatchResult(inserted=1)

    def wait(s: float) -> None:
        seen.append(health.stalls())
        problems.append(health.problems())

    policy = writer.Backoff(first_s=0.01, max_attempts=None, wait=wait, report=health)
    assert writer.retrying("tailer", flaky, policy).inserted == 1
    assert len(calls) == 3 and [s[0]["component"] for s in seen] == ["tailer", "tailer"]
    assert seen[-1][0]["retries"] == 2 and "I/O" in str(seen[-1][0]["reason"])
    assert problems[-1][0].startswith("tailer stalled: retrying for ") and "disk I/O error" in problems[-1][0]
    assert health.stalls() == [] and health.problems() == []  # cleared once the write went through
    with pytest.raises(BusyError):
        writer.retrying(
            "ingest",
            lambda: (_ for _ in ()).throw(BusyError("busy")),
            writer.Backoff(max_attempts=2, wait=lambda s: None, report=health),
        )
    assert health.stalls() == []  # cleared when it gave up too


async def test_health_is_503_while_stalled(tmp_path: Path) -> None:
    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    from ingestd.http.api import HEALTH, add_api_routes
    from ingestd.http.health import Health

    db = tmp_path / "h.db"
    conn = connect(db)
    migrate(conn)
    conn.close()
    app = web.Application()
    health = app[HEALTH] = Health()
    add_api_routes(app, db_path=db)
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/api/health")).status == 200
        health.retrying("tailer", "database error: database or disk is full")
        resp = await client.get("/api/health")
        doc = await resp.json()
        # one shape and one vocabulary for every reason the daemon is unhealthy
        assert resp.status == 503 and doc["error"]["code"] == "unhealthy"
        assert doc["error"]["message"].startswith("tailer stalled: retrying for ")
        assert doc["error"]["message"].endswith("s: database error: database or disk is full")
        st = await (await client.get("/api/status")).json()
        assert [(s["component"], s["retries"]) for s in st["stalls"]] == [("tailer", 1)]
        health.retried("tailer")
        assert (await client.get("/api/health")).status == 200
        assert (await (await client.get("/api/status")).json())["stalls"] == []


# -- framing ------------------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [-1, 0, 1])
@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_max_line_bytes_is_honoured_at_the_boundary(delta: int, chunk: int) -> None:
    cap = 64
    body = b"x" * (cap + delta)
    data = body + b"\r\n" + b"y\n"
    f = Framer(0, cap)
    out: list[Line | Oversized] = []
    for i in range(0, len(data), chunk):
        out += f.feed(data[i : i + chunk])
    if delta <= 0:
        assert out == [Line(0, body), Line(len(body) + 2, b"y")]
    else:
        first = out[0]
        assert isinstance(first, Oversized) and first.offset == 0 and first.length == len(body) + 1  # "\r" kept
        assert first.head == (body + b"\r")[:4096] and out[1] == Line(len(body) + 2, b"y")
    assert f.offset == len(data) and f.pending == 0


def test_framing_copies_each_byte_a_bounded_number_of_times() -> None:
    # one line of 3 MiB fed in 1 KiB chunks: the torn tail is joined once, not once per chunk
    cap = 8 << 20
    f = Framer(0, cap)
    line = b"z" * (3 << 20)
    for i in range(0, len(line), 1024):
        assert f.feed(line[i : i + 1024]) == []
    assert f.copied == 0 and f.pending == len(line)
    assert f.feed(b"\n") == [Line(0, line)]
    assert f.copied <= len(line) + 1
    # past the cap nothing is joined at all: memory stays at the head and the tail
    g = Framer(0, 1 << 16)
    for _ in range(64):
        g.feed(b"\0" * (1 << 16))
    assert g.copied == 0 and g.pending == 64 << 16 and g._parts == []
    [ov] = g.feed(b"\n")
    assert isinstance(ov, Oversized) and ov.length == 64 << 16 and len(ov.tail) == 64 << 10


def test_an_oversized_assistant_line_is_billed_and_round_trips_through_replay(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "-p").mkdir(parents=True)
    big = asst(SID, "msg_big", {"input_tokens": 11, "output_tokens": 13}, "2026-01-01T00:00:01.000Z")
    big["message"]["content"] = [{"type": "text", "text": "w" * 300_000}]
    (root / "-p" / f"{SID}.jsonl").write_bytes(
        jsonl(user(SID, "u1", "2026-01-01T00:00:00.000Z"), big)
        + jsonl(asst(SID, "msg_2", {"input_tokens": 1, "output_tokens": 2}, "2026-01-01T00:00:02.000Z"))
    )
    db = tmp_path / "o.db"
    conn = connect(db)
    migrate(conn)
    s = ingest_roots(conn, [root], now=NOW, max_line_bytes=100_000)
    assert s.oversized == 1
    [(payload,)] = q(db, "SELECT payload_bytes(codec, payload) FROM events_raw WHERE event_type = 'oversized'")
    assert len(payload) < 100_000  # head and tail only
    marker = orjson.loads(payload)["oversized"]
    assert marker["length"] > 300_000 and len(marker["blake2b"]) == 16
    assert q(
        db,
        f"SELECT tokens FROM {BY_BUCKET} WHERE message_id = 'msg_big' AND bucket IN ('input', 'output')"
        " ORDER BY bucket",
    ) == [(11,), (13,)]
    assert q(db, "SELECT occurred_at FROM token_usage WHERE message_id = 'msg_big' LIMIT 1") == [
        ("2026-01-01T00:00:01.000Z",)
    ]
    assert ingest_roots(conn, [root], now=NOW, max_line_bytes=100_000).rows_inserted == 0
    conn.close()
    assert_replay_ok(db, tmp_path)


def test_an_oversized_line_whose_usage_is_in_its_head_is_billed(tmp_path: Path) -> None:
    # Regression: message (usage included) first, a 2 MB field of the record after it: the tail held no
    # usage and the message was lost without a count (messages 0, no quarantine)
    root = tmp_path / "projects"
    (root / "-p").mkdir(parents=True)
    rec = asst(SID, "msg_head", {"input_tokens": 11, "output_tokens": 13}, "2026-01-01T00:00:01.000Z")
    rec["padding"] = "y" * 300_000
    rec["uuid"], rec["timestamp"] = rec.pop("uuid", "h1"), rec.pop("timestamp")  # the envelope's end last
    (root / "-p" / f"{SID}.jsonl").write_bytes(jsonl(rec))
    assert jsonl(rec).index(b'"usage"') < 4096 and b'"usage"' not in jsonl(rec)[-65536:]
    db = tmp_path / "o.db"
    conn = connect(db)
    migrate(conn)
    with capture_logs() as logs:
        s = ingest_roots(conn, [root], now=NOW, max_line_bytes=100_000)
    assert s.oversized == 1
    assert [e["usage_lost"] for e in logs if e["event"] == "line_oversized"] == [False]
    assert q(
        db,
        f"SELECT tokens FROM {BY_BUCKET} WHERE message_id = 'msg_head' AND bucket IN ('input', 'output')"
        " ORDER BY bucket",
    ) == [(11,), (13,)]
    conn.close()
    assert_replay_ok(db, tmp_path)


def test_usage_lost_in_the_middle_of_an_oversized_line_is_said() -> None:
    from ingestd.core.oversized import marker_payload, salvage, usage_lost

    head = b'{"type":"assistant","message":{"id":"msg_m","model":"m","content":[{"text":"' + b"z" * 5000
    tail = b"z" * 5000 + b'"}]},"uuid":"u","timestamp":"2026-01-01T00:00:00.000Z"}'
    rec = salvage(marker_payload(Oversized(0, 10**6, "00" * 8, head[:4096], tail)))
    assert rec is not None and rec["message"]["id"] == "msg_m"
    assert usage_lost(rec) is True
    assert usage_lost({"type": "assistant", "message": {"usage": {}}}) is False
    assert usage_lost({"type": "user"}) is False


# -- BOM and logs --------------------------------------------------------------------------------


def test_a_bom_before_a_subagent_transcript_loses_nothing(tmp_path: Path) -> None:
    files = sorted(CORPUS.glob("**/agent-*.jsonl")) if CORPUS.is_dir() else []
    one_line = [f for f in files if f.read_bytes().count(b"\n") == 1 and b'"usage"' in f.read_bytes()]
    if not one_line:
        pytest.skip("needs ../shared/corpus (a one-line subagent transcript with usage)")
    src = one_line[0]  # e.g. -Users-user-rcconsultech-task-api-benchmark-v0-2/agent-00a0149e.jsonl (2.0.60)
    rel = src.relative_to(CORPUS)
    root = tmp_path / "projects"
    dest = root / rel
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    db = tmp_path / "b.db"
    conn = connect(db)
    migrate(conn)
    s = ingest_roots(conn, [root], now=NOW)
    assert s.skipped == {} and s.lines == 1
    mid = orjson.loads(src.read_bytes())["message"]["id"]
    assert q(db, "SELECT count(*) FROM token_usage WHERE message_id = ?", (mid,)) == [(1,)]
    conn.close()


def test_lines_logged_invalid_before_the_bom_fix_are_projected_on_replay(tmp_path: Path) -> None:
    rows = _rows(b"\xef\xbb\xbf" + jsonl(asst(SID, "msg_b", {"output_tokens": 4}, "2026-01-01T00:00:00.000Z")))
    old = LogRow(rows[0].id, "jsonl", "invalid", rows[0].payload, NOW, SID, rows[0].origin, 0, 0)
    _, ch = fold_log(SID, [old], Ctx())
    assert [r.output for r in ch.token_usage] == [4]


def test_status_of_a_database_without_quarantine_rows_says_none(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    db = tmp_path / "e.db"
    conn = connect(db)
    migrate(conn)
    assert status_report(conn, now=datetime.now(UTC))["quarantine"] == {"records": 0, "by_reason": {}, "listed": []}
    conn.close()
    shutil.rmtree(tmp_path / "nothing", ignore_errors=True)


def test_hook_ids_with_lone_surrogates_stay_distinct(tmp_path: Path) -> None:
    from ingestd.core import hookkeys
    from ingestd.http.hooks import hook_row
    from ingestd.store.writer import apply_batch

    bodies = [
        b'{"hook_event_name":"UserPromptSubmit","session_id":"s\\ud800x","prompt":"a"}',
        b'{"hook_event_name":"UserPromptSubmit","session_id":"s\\ud801x","prompt":"b"}',
        b'{"hook_event_name":"UserPromptSubmit","session_id":"s\\udc00x","prompt":"c"}',
    ]
    events = [hookkeys.parse_body(b) for b in bodies]
    assert all(isinstance(e, hookkeys.HookEvent) for e in events)
    sids = [e.session_id for e in events if isinstance(e, hookkeys.HookEvent)]
    assert len(set(sids)) == 3  # once all three were "s?x": one session
    db = tmp_path / "h.db"
    conn = connect(db)
    migrate(conn)
    rows = [
        hook_row(e, b, f"h:test:{i}", 1_767_225_600_000_000_000 + i)
        for i, (e, b) in enumerate(zip(events, bodies, strict=True))
        if isinstance(e, hookkeys.HookEvent)
    ]
    apply_batch(conn, rows)
    conn.close()
    assert sorted(r[0] for r in q(db, "SELECT id FROM sessions")) == sorted(sids)
    assert_replay_ok(db, tmp_path)


def test_salvaged_text_is_repaired_like_any_lenient_line() -> None:
    # found by test_mutation_fuzz: "\ud83d" in an oversized line's kept bytes reached SQLite as a
    # lone surrogate; the isolation caught it, the salvage now repairs it
    from ingestd.core.framing import Oversized
    from ingestd.core.oversized import marker_payload, salvage

    head = b'{"type":"assistant","sessionId":"s\\ud800","message":{"model":"\\ud83d","id":"m1",'
    tail = b'"usage":{"input_tokens":3}},"type":"assistant","uuid":"u","timestamp":"2026-01-01T00:00:00.000Z"}'
    rec = salvage(marker_payload(Oversized(0, 10**9, "00" * 8, head, tail)))
    assert rec is not None
    assert rec["sessionId"] == "s\U000f0000" and rec["message"]["model"] == "\U000f003d"
    assert rec["message"]["usage"] == {"input_tokens": 3} and rec["timestamp"] == "2026-01-01T00:00:00.000Z"
    orjson.dumps(rec)  # every string encodes as UTF-8


def test_the_tailer_reads_a_growing_torn_line_once(tmp_path: Path) -> None:
    # the daemon keeps a file's framer while its last line is torn: each call reads only the new
    # bytes (one pass over an endless line), and the line is logged once it completes
    root = tmp_path / "projects"
    (root / "-p").mkdir(parents=True)
    path = root / "-p" / f"{SID}.jsonl"
    rec = asst(SID, "msg_1", {"input_tokens": 1, "output_tokens": 2}, "2026-01-01T00:00:00.000Z")
    whole = jsonl(rec)
    db = tmp_path / "g.db"
    conn = connect(db)
    migrate(conn)
    framers: dict[Any, Any] = {}
    read = []
    for end in (10, 60, len(whole) - 1, len(whole)):
        path.write_bytes(whole[:end])
        s = ingest_roots(conn, [root], now=NOW, paths=[path], tailing=Tailing(framers=framers))
        read.append(s.bytes)
    assert read == [10, 50, len(whole) - 61, 1]  # every byte read once
    assert framers == {}  # nothing torn is held any more
    assert q(db, "SELECT count(*) FROM token_usage WHERE message_id = 'msg_1'") == [(1,)]
    conn.close()


def test_ingestd_status_shows_the_daemons_stall_from_its_mirror_file(tmp_path: Path) -> None:
    from ingestd.http.health import Health
    from ingestd.store import stall

    db = tmp_path / "m.db"
    conn = connect(db)
    migrate(conn)
    conn.close()
    health = Health(mirror=stall.mirror_path(db))
    assert not stall.mirror_path(db).exists()  # nothing written until something stalls
    health.retrying("tailer", "database error: database is locked")
    st = run_cli("status", "--db", str(db), "--no-stat", "--json")
    [got] = orjson.loads(st.stdout)["stalls"]
    assert got["component"] == "tailer" and "locked" in got["reason"] and got["retries"] == 1
    assert "stalled" in run_cli("status", "--db", str(db), "--no-stat").stdout
    assert stall.mirror_path(db).stat().st_mode & 0o077 == 0  # private, like the database
    health.retried("tailer")
    assert not stall.mirror_path(db).exists()
    assert orjson.loads(run_cli("status", "--db", str(db), "--no-stat", "--json").stdout)["stalls"] == []
    # a file left by a daemon that is gone says nothing
    stall.mirror_path(db).write_bytes(orjson.dumps({"pid": 2**22 + 12345, "stalls": [{"component": "x"}]}))
    assert stall.read_mirror(db, 0.0) == []
