"""Central cost equals local cost under the price dimensions (SPEC §5.1, pg migration 0003).

A fast-mode message, a long-context message and a message with web searches (and one at a speed
no price row knows) are ingested by one host, shipped and projected; the central store's cost
report must give the same dollars and the same unpriced part as the host's own database, and
those dollars are checked against arithmetic written out here (the 0012 list prices).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from ingestd.central.check import rollup_differences
from ingestd.central.pg import PgReadConn
from ingestd.central.pg import connect as pg_connect
from ingestd.central.project import project_store
from ingestd.report.cost import cost_report
from ingestd.report.window import make_window, resolve_zone
from tests.central.support import local_db, project, ship_all
from tests.store.test_price_dimensions import OPUS, SID, SONNET, message, usage

ZONE = resolve_zone("UTC", {})
WINDOW = make_window(None, None, ZONE, datetime(2030, 1, 1, tzinfo=UTC))


def _cost(conn: Any, by: str | None = None) -> dict[str, Any]:
    return cost_report(conn, by=by, window=WINDOW, zone=ZONE)


def _shipped(tmp_path: Path, pg_url: str, sid: str, recs: list[dict[str, Any]]) -> Any:
    """``recs`` as session ``sid``'s transcript, ingested by host ``host-a`` and shipped (not projected yet);
    returns the host's database."""
    root = tmp_path / "projects"
    (root / "-w").mkdir(parents=True)
    (root / "-w" / f"{sid}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    local = local_db(tmp_path / "a.db", [root], "host-a")
    ship_all(local, pg_url)
    return local


def test_fast_long_context_and_web_search_are_priced_centrally_as_locally(tmp_path: Path, pg_url: str) -> None:
    # all at test_price_dimensions.WHEN (2026-06-01), after every seeded dimension's effective date
    recs = [
        message("m-fast", OPUS, usage(inp=1_000, out=2_000, speed="fast")),
        message("m-long", SONNET, usage(inp=150_000, read=50_001, out=1_000)),
        message("m-search", SONNET, usage(inp=1_000, out=1_000, server_tool_use={"web_search_requests": 3})),
        message("m-turbo", OPUS, usage(inp=7, out=11, speed="turbo")),
    ]
    local = _shipped(tmp_path, pg_url, SID, recs)
    project(pg_url)
    central = PgReadConn(pg_connect(pg_url, autocommit=True))
    try:
        loc, cen = _cost(local), _cost(central)
        assert cen["cost_usd"] == loc["cost_usd"]
        assert cen["totals"] == loc["totals"]
        assert cen["unpriced"] == loc["unpriced"]
        assert _cost(central, "session")["rows"] == _cost(local, "session")["rows"]
        want = (
            (Decimal(1_000) * 5 + Decimal(2_000) * 25) * 6  # fast: 6x Opus 4.6
            + Decimal(150_000) * 6
            + Decimal(50_001) * Decimal("0.6")
            + Decimal(1_000) * Decimal("22.5")  # prompt 200,001 > 200,000: the tier
            + Decimal(1_000) * 3
            + Decimal(1_000) * 15  # standard Sonnet 4.5
        ) / 10**6 + 3 * Decimal("0.01")  # three searches
        assert Decimal(cen["cost_usd"]) == want
        assert cen["unpriced"][OPUS]["tokens"] == 18
        rows = central.execute(
            "SELECT message_id, bucket, prompt_tokens, speed, web_search_requests FROM token_usage"
            " WHERE bucket = 'output' ORDER BY message_id"
        ).fetchall()
        assert rows == [
            ("m-fast", "output", 1_000, "fast", 0),
            ("m-long", "output", 200_001, "", 0),
            ("m-search", "output", 1_000, "", 3),
            ("m-turbo", "output", 7, "turbo", 0),
        ]
        tiers = central.execute(
            "SELECT DISTINCT model, tier, speed FROM token_usage_rollup ORDER BY 1, 2, 3"
        ).fetchall()
        assert tiers == [(OPUS, 0, "fast"), (OPUS, 0, "turbo"), (SONNET, 0, ""), (SONNET, 1, "")]
        assert rollup_differences(central.conn) == []
    finally:
        central.close()
        local.close()


A = "aaaaaaaa-0000-4000-8000-00000000000a"  # the file's session, continuing B's conversation
B = "bbbbbbbb-0000-4000-8000-00000000000b"


def _rec(sid: str, uuid: str, ts: str, text: str) -> dict[str, Any]:
    return {"type": "user", "sessionId": sid, "uuid": uuid, "timestamp": ts, "cwd": "/w",
            "message": {"role": "user", "content": text}}  # fmt: skip


def test_summary_title_joins_its_leaf_in_a_later_slice_as_locally(tmp_path: Path, pg_url: str) -> None:
    # 1.0.x: the summary of B's conversation at the top of A's file, B's records copied in after it
    recs = [
        {"type": "summary", "summary": "Planning the MVP", "leafUuid": "leaf-b"},
        _rec(B, "first-b", "2025-08-24T19:00:00.000Z", "hello"),
        _rec(B, "leaf-b", "2025-08-24T19:26:27.994Z", "and more"),
        _rec(A, "first-a", "2025-08-25T08:00:00.000Z", "continue"),
        {"type": "summary", "summary": "Names no record here", "leafUuid": "elsewhere"},
        {"type": "summary", "summary": "Continuing", "leafUuid": "first-a"},  # its leaf came slices before
    ]
    local = _shipped(tmp_path, pg_url, A, recs)
    pg = pg_connect(pg_url)
    try:
        assert project_store(pg, batch_rows=1).slices == len(recs)  # leaves two slices after / before
    finally:
        pg.close()
    central = PgReadConn(pg_connect(pg_url, autocommit=True))
    try:
        q = "SELECT id, title, title_source FROM sessions ORDER BY id"
        assert central.execute(q) == local.execute(q).fetchall()
        assert central.execute(q) == [(A, "Continuing", "summary"), (B, "Planning the MVP", "summary")]
    finally:
        central.close()
        local.close()


def test_quarantined_records_are_the_hosts_own(tmp_path: Path, pg_url: str) -> None:
    recs = [
        message("m-bad-count", OPUS, usage(inp=5, out=9) | {"input_tokens": "many"}),
        message("m-bad-time", OPUS, usage(inp=3, out=4), ts="yesterday"),
        message("m-good", OPUS, usage(inp=1, out=2)),
    ]
    local = _shipped(tmp_path, pg_url, SID, recs)
    project(pg_url)
    central = PgReadConn(pg_connect(pg_url, autocommit=True))
    try:
        q = "SELECT reason, session_id, origin, origin_offset, detail FROM quarantine ORDER BY 1, 4"
        got = central.execute(q)
        assert got == local.execute(q).fetchall()
        assert [r[0] for r in got] == ["timestamp", "tokens"]
        assert central.execute("SELECT DISTINCT host_id FROM quarantine") == [("host-a",)]
        assert _cost(central)["totals"] == _cost(local)["totals"]
    finally:
        central.close()
        local.close()
