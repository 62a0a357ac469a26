"""The price model beyond five flat rates (SPEC §5.1; SQLite migrations 0011-0012, pg 0003), end to end.

Transcript lines go through the projector and the store; the cost report's answer (the same report
on either store) is checked against arithmetic written out here (USD per MTok x tokens / 10**6,
from the seeded list prices), never against the code's own output. Each case is a session of its
own, read with ``cost --by session``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from ingestd.core.framing import Framer
from ingestd.core.keys import short_hash
from ingestd.core.records import line_row
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, resolve_zone
from tests.stores.stores import Store

SID = "d1d1d1d1-0000-4000-8000-000000000001"
SONNET = "claude-sonnet-4-5-20250929"  # long-context tier from 2025-09-29 (0012)
OPUS = "claude-opus-4-6"  # fast mode 6x from 2026-02-05 (0012)
WHEN = "2026-06-01T12:00:00.000Z"
ALL = Window(None, None)
UTC = resolve_zone("UTC", {})


def usage(inp: int = 0, out: int = 0, read: int = 0, w5: int = 0, w1: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": w5 + w1,
        "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1},
        **extra,
    }


def message(mid: str, model: str, u: dict[str, Any], ts: str = WHEN, sid: str = SID) -> dict[str, Any]:
    return {
        "type": "assistant",
        "sessionId": sid,
        "uuid": f"u-{mid}-{len(orjson.dumps(u))}",
        "timestamp": ts,
        "message": {"id": mid, "model": model, "role": "assistant", "content": [{"type": "text", "text": "x"}],
                    "usage": u},
    }  # fmt: skip


def cost(store: Store, recs: list[dict[str, Any]], n: int = 0) -> dict[str, Any]:
    """The cost report of ``recs`` logged as session ``n``'s transcript (message ids made its own)."""
    sid = f"d1d1d1d1-0000-4000-8000-{n:012d}"
    origin = f"-w/{sid}.jsonl"
    recs = [{**r, "sessionId": sid, "message": {**r["message"], "id": f"{r['message']['id']}-{n}"}} for r in recs]
    data = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    oh = short_hash(origin.encode())
    store.log(
        [
            line_row(ln, origin=origin, origin_hash=oh, gen=0, received_at=WHEN, path_session=sid)
            for ln in Framer(0).feed(data)
        ]
    )
    assert store.rollup_differences() == []
    doc = cost_report(store.reader, by="session", window=ALL, zone=UTC)
    (row,) = [r for r in doc["rows"] if r["session_id"] == sid]
    return dict(row)


def test_long_context_just_over_the_threshold_prices_every_bucket_at_the_tier(store: Store) -> None:
    # prompt = 150,000 input + 50,001 cache read = 200,001 > 200,000: Sonnet 4.5 premium rates
    doc = cost(store, [message("m1", SONNET, usage(inp=150_000, read=50_001, out=1_000))])
    want = (
        Decimal(150_000) * 6 / 10**6
        + Decimal(50_001) * Decimal("0.6") / 10**6
        + Decimal(1_000) * Decimal("22.5") / 10**6
    )
    assert want == Decimal("0.9525006")
    assert Decimal(doc["cost_usd"]) == want and doc["cost_complete"] is True


def test_a_prompt_of_exactly_the_threshold_is_standard(store: Store) -> None:
    doc = cost(store, [message("m1", SONNET, usage(inp=150_000, read=50_000, out=1_000))])
    want = Decimal(150_000) * 3 / 10**6 + Decimal(50_000) * Decimal("0.3") / 10**6 + Decimal(1_000) * 15 / 10**6
    assert Decimal(doc["cost_usd"]) == want == Decimal("0.48")


def test_both_cache_writes_count_toward_the_prompt(store: Store) -> None:
    # 100,000 + 60,000 + 30,000 (5m) + 10,001 (1h) = 200,001
    doc = cost(store, [message("m1", SONNET, usage(inp=100_000, read=60_000, w5=30_000, w1=10_001, out=1_000))])
    want = (
        Decimal(100_000) * 6 + Decimal(60_000) * Decimal("0.6") + Decimal(30_000) * Decimal("7.5")
        + Decimal(10_001) * 12 + Decimal(1_000) * Decimal("22.5")
    ) / 10**6  # fmt: skip
    assert Decimal(doc["cost_usd"]) == want == Decimal("1.003512")


def test_fast_and_standard_speed(store: Store) -> None:
    standard = Decimal(1_000) * 5 / 10**6 + Decimal(2_000) * 25 / 10**6
    assert standard == Decimal("0.055")
    doc = cost(store, [message("m1", OPUS, usage(inp=1_000, out=2_000, speed="standard"))], 0)
    assert Decimal(doc["cost_usd"]) == standard
    doc = cost(store, [message("m1", OPUS, usage(inp=1_000, out=2_000, speed="fast"))], 1)
    assert Decimal(doc["cost_usd"]) == 6 * standard == Decimal("0.33") and doc["cost_complete"] is True


def test_an_unknown_speed_is_unpriced_never_standard(store: Store) -> None:
    doc = cost(
        store,
        [
            message("m1", OPUS, usage(inp=1_000, out=2_000, speed="turbo")),
            message("m2", OPUS, usage(inp=10, out=10)),
        ],
    )
    assert Decimal(doc["cost_usd"]) == Decimal(10) * 5 / 10**6 + Decimal(10) * 25 / 10**6  # m2 only
    assert doc["cost_complete"] is False
    report = cost_report(store.reader, by=None, window=ALL, zone=UTC)
    assert report["unpriced"][OPUS]["tokens"] == 3_000 and report["unpriced"][OPUS]["reasons"] == ["speed:turbo"]


def test_a_streamed_response_repeating_its_search_count_is_billed_once(store: Store) -> None:
    st = {"server_tool_use": {"web_search_requests": 3, "web_fetch_requests": 2}}
    parts = [message("m1", SONNET, usage(inp=100, out=n, **st)) for n in (1, 20, 50)]  # three streamed parts
    doc = cost(store, parts)
    # tokens: the maximum over parts (100 input, 50 output); 3 searches at $10 per 1,000; fetches are free
    want = Decimal(100) * 3 / 10**6 + Decimal(50) * 15 / 10**6 + 3 * Decimal(10) / 1_000
    assert want == Decimal("0.03105")
    assert Decimal(doc["cost_usd"]) == want
    assert cost_report(store.reader, by=None, window=ALL, zone=UTC)["web_search_requests"] == 3


def test_a_record_with_a_refused_value_is_quarantined_and_its_sound_parts_count(store: Store) -> None:
    doc = cost(
        store,
        [
            message("m-bad-count", OPUS, usage(inp=5, out=9) | {"input_tokens": "many"}),
            message("m-bad-time", OPUS, usage(inp=3, out=4), ts="yesterday"),
            message("m-good", OPUS, usage(inp=1, out=2)),
        ],
    )
    got = store.rows("SELECT reason, origin_offset IS NOT NULL, detail FROM quarantine ORDER BY reason")
    assert [(r[0], r[1]) for r in got] == [("timestamp", True), ("tokens", True)]
    assert "occurred_at inferred" in str(got[0][2])
    assert doc["totals"]["input"] == 0 + 3 + 1 and doc["totals"]["output"] == 9 + 4 + 2
