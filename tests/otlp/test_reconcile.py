"""Claude Code's telemetry reconciled with the transcript of the same session: a matched api_request
is evidence of its message (never counted twice, its disagreements counted), an unmatched one is
usage of its own until a transcript line explains it, in any order, replay-identical."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.core import otlp
from ingestd.core.otelfold import RANK_OTEL, usage_id
from ingestd.core.records import NewLogRow
from ingestd.projection.dump import columns
from ingestd.projection.replay import replay
from ingestd.store.writer import apply_batch
from tests.ingest.support import count, dump, new_db
from tests.otlp.bodies import LIVE, api_request_attrs, event_attrs, json_logs, json_metrics, json_record

SID = "77777777-7777-4777-8777-777777777777"
MODEL = "claude-sonnet-4-5-20250929"
T0 = 1796163872000000000
READ_AT = "2026-12-01T22:30:00.000Z"


def _ts(ms: int) -> str:
    from ingestd.core.timefmt import from_epoch_ns

    return from_epoch_ns(T0 + ms * 1_000_000)


def assistant(offset: int, mid: str, uuid: str, out: int, *, request_id: str | None = None, ms: int = 0) -> NewLogRow:
    usage = {
        "input_tokens": 1200,
        "output_tokens": out,
        "cache_read_input_tokens": 5000,
        "cache_creation_input_tokens": 300,
        "cache_creation": {"ephemeral_5m_input_tokens": 300, "ephemeral_1h_input_tokens": 0},
    }
    obj: dict[str, Any] = {
        "type": "assistant",
        "sessionId": SID,
        "uuid": uuid,
        "timestamp": _ts(ms),
        "message": {"id": mid, "role": "assistant", "model": MODEL, "content": [], "usage": usage},
    }
    if request_id is not None:
        obj["requestId"] = request_id
    data = orjson.dumps(obj)
    return NewLogRow(
        f"j:t:0:{offset:012x}", "jsonl", "assistant", data, READ_AT, SID, f"p/{SID}.jsonl", 0, offset, obj=obj
    )


def transcript() -> list[NewLogRow]:
    return [
        assistant(0, "msg_1", "u1", 40, request_id="req_1", ms=0),
        assistant(100, "msg_2", "u2", 7, ms=2000),
        assistant(200, "msg_3", "u3", 33, ms=4000),
    ]


def telemetry() -> list[NewLogRow]:
    def at(ms: int) -> int:
        return T0 + ms * 1_000_000

    records = [
        # its request id names msg_1; Claude Code counted one output token more than the transcript
        json_record(api_request_attrs(seq=1, session=SID, output_tokens=41, request_id="req_1"), at(10)),
        # no request id: the assistant_response after it names msg_2's record
        json_record(api_request_attrs(seq=3, session=SID, output_tokens=7), at(2010)),
        json_record(event_attrs("assistant_response", seq=4, session=SID, **{"message.uuid": "u2"}), at(2011)),
        # neither: the same figures as msg_3, two seconds after it
        json_record(api_request_attrs(seq=5, session=SID, output_tokens=33, split=None), at(4010)),
        # an auxiliary call (the title) no transcript shows: usage of its own, 1h/5m split unknown
        json_record(
            api_request_attrs(
                seq=6,
                session=SID,
                model="claude-haiku-4-5-20251001",
                input_tokens=50,
                output_tokens=3,
                cache_read=0,
                cache_creation=0,
                split=None,
                query_source="auxiliary",
                cost_usd=0.000065,
            ),
            at(4500),
        ),
        json_record(
            event_attrs("tool_result", seq=7, session=SID, tool_name="Read", tool_use_id="toolu_1", success="true"),
            at(4600),
        ),
    ]
    body = json_logs(records)
    parsed = otlp.parse_request(otlp.LOGS, orjson.loads(body), body)
    assert isinstance(parsed, otlp.Export)
    mbody = json_metrics([("claude_code.cost.usage", {"session.id": SID, "model": MODEL}, 0.0191, at(0), at(5000))])
    mparsed = otlp.parse_request(otlp.METRICS, orjson.loads(mbody), mbody)
    assert isinstance(mparsed, otlp.Export)
    return parsed.rows_at(READ_AT) + mparsed.rows_at(READ_AT)


def _aux_key() -> str:
    return f"{T0 + 4500 * 1_000_000}:6"


def check(conn: Any) -> None:
    usage = conn.execute(
        "SELECT message_id, model, input, output, cache_write_5m, claim_rank FROM token_usage ORDER BY message_id"
    ).fetchall()
    aux = usage_id(SID, _aux_key())
    assert usage == [
        ("msg_1", MODEL, 1200, 40, 300, 2),
        ("msg_2", MODEL, 1200, 7, 300, 2),
        ("msg_3", MODEL, 1200, 33, 300, 2),
        (aux, "claude-haiku-4-5-20251001", 50, 3, 0, RANK_OTEL),
    ]
    reqs = conn.execute(
        "SELECT message_id, matched_by, usage_id, agrees, mismatch, split_known FROM otel_requests ORDER BY occurred_at"
    ).fetchall()
    assert reqs == [
        ("msg_1", "request_id", None, 0, "output 41 != 40", 1),
        ("msg_2", "message_uuid", None, 1, None, 1),
        ("msg_3", "tokens", None, 1, None, 0),
        (None, None, aux, None, None, 0),
    ]
    # the rollup holds exactly the transcript's messages plus the auxiliary call
    assert count(conn, "SELECT sum(row_count) FROM token_usage_rollup") == 4
    assert count(conn, "SELECT sum(output) FROM token_usage_rollup") == 40 + 7 + 33 + 3
    assert conn.execute("SELECT status FROM tool_calls WHERE tool_use_id = 'toolu_1'").fetchall() == [("completed",)]
    assert conn.execute("SELECT name, value FROM otel_metric_points").fetchall() == [("claude_code.cost.usage", 0.0191)]


def test_transcript_then_telemetry(tmp_path: Path) -> None:
    conn = new_db(tmp_path / "a.db")
    apply_batch(conn, transcript())
    apply_batch(conn, telemetry())
    check(conn)


def test_telemetry_first_is_usage_until_the_transcript_explains_it(tmp_path: Path) -> None:
    conn = new_db(tmp_path / "b.db")
    apply_batch(conn, telemetry())
    # before any transcript line: every api_request is usage of its own
    assert count(conn, "SELECT count(*) FROM token_usage WHERE claim_rank = ?", (RANK_OTEL,)) == 4
    for row in transcript():
        apply_batch(conn, [row])
    check(conn)


@pytest.mark.parametrize("seed", range(12))
def test_any_order_and_batching_gives_the_same_rows(tmp_path: Path, seed: int) -> None:
    rows = transcript() + telemetry()
    ref = new_db(tmp_path / "ref.db")
    apply_batch(ref, rows)
    check(ref)
    rng = random.Random(seed)
    shuffled = rows[:]
    rng.shuffle(shuffled)
    conn = new_db(tmp_path / f"s{seed}.db")
    it = iter(shuffled)
    while chunk := list(itertools.islice(it, rng.randint(1, 3))):
        apply_batch(conn, chunk)
    assert projected(conn) == projected(ref)


def projected(conn: Any) -> dict[str, list[Any]]:
    """The projections, less the log ids a different arrival order numbers differently."""
    out = dump(conn)
    for table in ("otel_requests", "otel_metric_points", "events"):
        cols = [c for c in columns(conn, table) if c != "raw_event_id"]
        out[table] = sorted(conn.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall())
    return out


def test_replay_is_identical_with_telemetry_in_the_log(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    conn = new_db(db)
    apply_batch(conn, telemetry())
    for row in transcript():
        apply_batch(conn, [row])
    conn.close()
    assert replay(db).comparison.ok


@pytest.mark.corpus
def test_the_live_capture_reconciles_exactly(tmp_path: Path) -> None:
    """The real 2.1.332 run of ../shared/live-2.1.332: its transcript and its first logs export.
    The API stand-in sent no request-id, so the tool-use turn joins by its figures and the answer
    through assistant_response; nothing is counted twice and Claude Code's cost-state totals equal
    ours."""
    if not LIVE.is_dir():
        pytest.skip("../shared/live-2.1.332 is absent")
    from ingestd.core.framing import split_lines
    from ingestd.core.keys import short_hash
    from ingestd.core.records import line_row

    path = next((LIVE / "projects").rglob("*.jsonl"))
    origin = path.relative_to(LIVE / "projects").as_posix()
    lines, _ = split_lines(path.read_bytes())
    rows = [
        line_row(
            ln,
            origin=origin,
            origin_hash=short_hash(origin.encode()),
            gen=0,
            received_at=READ_AT,
            path_session=path.stem,
        )
        for ln in lines
    ]
    body = (LIVE / "otlp" / "logs-1.json").read_bytes()
    parsed = otlp.parse_request(otlp.LOGS, orjson.loads(body), body)
    assert isinstance(parsed, otlp.Export)
    conn = new_db(tmp_path / "live.db")
    apply_batch(conn, parsed.rows_at(READ_AT))
    apply_batch(conn, rows)
    got = conn.execute("SELECT matched_by, agrees, usage_id FROM otel_requests ORDER BY occurred_at").fetchall()
    assert got == [("tokens", 1, None), ("message_uuid", 1, None)]
    totals = conn.execute("SELECT sum(input), sum(output), sum(cache_read), sum(cache_write_5m) FROM token_usage")
    cost_state = orjson.loads(lines[-1].data)["modelUsage"][MODEL]
    assert totals.fetchall() == [
        (
            cost_state["inputTokens"],
            cost_state["outputTokens"],
            cost_state["cacheReadInputTokens"],
            cost_state["cacheCreationEphemeral5mInputTokens"],
        )
    ]


def test_cost_by_source_splits_transcripts_from_telemetry_only(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ingestd.cli import cli

    db = tmp_path / "c.db"
    conn = new_db(db)
    apply_batch(conn, transcript() + telemetry())
    conn.close()
    res = CliRunner().invoke(cli, ["cost", "--db", str(db), "--by", "source", "--json", "--tz", "UTC"])
    assert res.exit_code == 0, res.output
    doc = orjson.loads(res.stdout)
    assert doc["source"] == "token_usage"
    got = {r["source"]: (r["billed_messages"], r["totals"]["output"]) for r in doc["rows"]}
    assert got == {"transcript": (3, 80), "otel": (1, 3)}
    t = doc["telemetry"]
    assert (t["events"], t["matched"], t["disagreements"], t["otel_only"], t["split_unknown"]) == (4, 3, 1, 1, 2)
    assert t["metrics"]["claude_code.cost.usage"]["sum"] == pytest.approx(0.0191)
    # the total is the transcript's plus exactly the auxiliary call, never Claude Code's own figures
    total = CliRunner().invoke(cli, ["cost", "--db", str(db), "--json", "--tz", "UTC"])
    assert orjson.loads(total.stdout)["billed_messages"] == 4
    text = CliRunner().invoke(cli, ["cost", "--db", str(db), "--by", "source", "--tz", "UTC"])
    assert text.exit_code == 0 and "telemetry: 4 api requests, 3 explained by a transcript (1 disagree)" in text.output


def test_a_streamed_message_matches_once_its_last_part_is_read(tmp_path: Path) -> None:
    """Parts of one message repeat its id with growing output: the figures match only the whole."""
    conn = new_db(tmp_path / "p.db")
    apply_batch(conn, telemetry())
    apply_batch(conn, [assistant(200, "msg_3", "u3a", 1, ms=4000)])  # the first part: output 1
    tokens = "SELECT matched_by FROM otel_requests WHERE request_key = ?"
    key = f"{T0 + 4010 * 1_000_000}:5"
    assert conn.execute(tokens, (key,)).fetchall() == [(None,)]
    apply_batch(conn, [assistant(300, "msg_3", "u3b", 33, ms=4001)])  # the last part: output 33
    assert conn.execute(tokens, (key,)).fetchall() == [("tokens",)]
    assert count(conn, "SELECT count(*) FROM token_usage WHERE message_id = ?", (usage_id(SID, key),)) == 0
