"""The price model beyond five flat rates (SPEC §5.1, migrations 0011 and 0012): ``pricing set`` /
``load`` / ``list`` on a local database and what new rows do to its stored usage. The cost of each
price dimension on either store is the contract suite's (``tests/stores/test_prices.py``).

The cost report's answer is checked against arithmetic written out here (USD per MTok x tokens /
10**6), never against the code's own output.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core.framing import Framer
from ingestd.core.keys import short_hash
from ingestd.core.records import line_row
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, resolve_zone
from ingestd.store import rollup
from ingestd.store.writer import apply_batch
from tests.stores.test_prices import OPUS, SID, SONNET, WHEN, message, usage

ALL = Window(None, None)
ZERO_BUCKETS = ("--cache-read", "0.1", "--cache-write-5m", "1", "--cache-write-1h", "2")  # priced, 0 tokens here
UTC = resolve_zone("UTC", {})


def ingest(conn: Any, recs: list[dict[str, Any]]) -> None:
    origin = f"-w/{SID}.jsonl"
    data = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    rows = [
        line_row(ln, origin=origin, origin_hash=short_hash(origin.encode()), gen=0, received_at=WHEN, path_session=SID)
        for ln in Framer(0).feed(data)
    ]
    apply_batch(conn, rows)
    assert rollup.differences(conn) == []


def test_searches_without_a_fee_make_the_answer_incomplete(tmp_path: Path, db_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(
        cli, ["pricing", "set", "m-nofee", "--effective-from", "2026-01-01", "--input", "1", "--output", "2",
              *ZERO_BUCKETS, "--db", str(db_path)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    from ingestd.store.connection import connect

    conn = connect(db_path)
    ingest(
        conn,
        [message("m1", "m-nofee", usage(inp=1_000_000, out=1_000_000, server_tool_use={"web_search_requests": 4}))],
    )
    doc = cost_report(conn, by=None, window=ALL, zone=UTC)
    assert Decimal(doc["cost_usd"]) == Decimal(1) + Decimal(2)  # the tokens are priced; the searches are not
    assert doc["cost_complete"] is False
    assert doc["unpriced"]["m-nofee"] == {
        "tokens": 0,
        "messages": 0,
        "web_search_requests": 4,
        "reasons": ["web_search"],
    }
    # a fee row added later re-prices the stored usage: 4 x $0.05
    res = runner.invoke(
        cli, ["pricing", "set", "m-nofee", "--effective-from", "2026-01-01", "--input", "1", "--output", "2",
              *ZERO_BUCKETS, "--web-search-fee", "0.05", "--db", str(db_path)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = cost_report(conn, by=None, window=ALL, zone=UTC)
    assert Decimal(doc["cost_usd"]) == 3 + 4 * Decimal("0.05") and doc["cost_complete"] is True


def test_a_later_price_row_reprices_history_with_a_new_tier(tmp_path: Path, db_path: Path) -> None:
    from ingestd.store.connection import connect

    conn = connect(db_path)
    ingest(conn, [message("m1", SONNET, usage(inp=150_000, read=50_000, out=1_000))])  # exactly 200,000: standard
    assert Decimal(cost_report(conn, by=None, window=ALL, zone=UTC)["cost_usd"]) == Decimal("0.48")
    args = ["pricing", "set", SONNET, "--effective-from", "2026-05-01", "--input", "3", "--cache-read", "0.3",
            "--output", "15", "--long-context-threshold", "150000", "--long-context", "input=10",
            "--long-context", "cache_read=1", "--long-context", "output=30", "--db", str(db_path)]  # fmt: skip
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    want = (Decimal(150_000) * 10 + Decimal(50_000) * 1 + Decimal(1_000) * 30) / 10**6
    assert want == Decimal("1.58")
    assert Decimal(cost_report(conn, by=None, window=ALL, zone=UTC)["cost_usd"]) == want
    listed = CliRunner().invoke(cli, ["pricing", "list", "--model", SONNET, "--json", "--db", str(db_path)])
    rows = [r for r in orjson.loads(listed.output)["rows"] if r["effective_from"].startswith("2026-05-01")]
    got = {(r["bucket"], r["long_context_threshold"], Decimal(r["long_context_usd_per_mtok"])) for r in rows}
    assert got == {("input", 150000, 10), ("cache_read", 150000, 1), ("output", 150000, 30)}


def test_pricing_load_reads_every_dimension_and_round_trips_list_json(tmp_path: Path, db_path: Path) -> None:
    doc = [
        {
            "model": "m-dims",
            "effective_from": "2026-01-01",
            "rates": {"input": 2, "output": 8},
            "long_context": {"threshold": 1000, "rates": {"input": 4, "output": 12}},
            "speed_multipliers": {"fast": 3},
            "server_tool_fees": {"web_search_requests": "0.01"},
        }
    ]
    f = tmp_path / "p.json"
    f.write_bytes(orjson.dumps(doc))
    runner = CliRunner()
    assert runner.invoke(cli, ["pricing", "load", str(f), "--db", str(db_path)]).exit_code == 0
    listed = runner.invoke(cli, ["pricing", "list", "--model", "m-dims", "--json", "--db", str(db_path)]).output
    rows = orjson.loads(listed)["rows"]
    got = {
        r["bucket"]: (
            Decimal(r["usd_per_mtok"]),
            r["long_context_threshold"],
            Decimal(r["long_context_usd_per_mtok"]),
            {k: Decimal(v) for k, v in r["speed_multipliers"].items()},
            r["web_search_usd_per_request"] and Decimal(r["web_search_usd_per_request"]),
        )
        for r in rows
    }
    assert got == {
        "input": (2, 1000, 4, {"fast": 3}, None),
        "output": (8, 1000, 12, {"fast": 3}, Decimal("0.01")),
    }
    # what `list --json` prints loads back to the same rows
    again = tmp_path / "again.db"
    f.write_text(listed)
    assert runner.invoke(cli, ["pricing", "load", str(f), "--db", str(again)]).exit_code == 0
    relisted = runner.invoke(cli, ["pricing", "list", "--model", "m-dims", "--json", "--db", str(again)]).output
    strip = [{k: v for k, v in r.items() if k not in ("verified_at", "source")} for r in orjson.loads(relisted)["rows"]]
    assert strip == [{k: v for k, v in r.items() if k not in ("verified_at", "source")} for r in rows]


def test_bad_dimensions_are_refused_with_a_reason(db_path: Path) -> None:
    base = ["pricing", "set", "m-bad", "--effective-from", "2026-01-01", "--input", "1", "--db", str(db_path)]
    cases = [
        (["--long-context-threshold", "10"], "long_context rates must name exactly the buckets"),
        (["--long-context", "input=2"], "threshold must be a whole number"),
        (["--web-search-fee", "0.01"], "goes on the row's output rate"),
        (["--speed", "fast"], "--speed takes NAME=VALUE"),
        (["--speed", "fast=-1"], "speed multiplier for 'fast' must be a number from 0"),
    ]
    for extra, why in cases:
        res = CliRunner().invoke(cli, [*base, *extra])
        assert res.exit_code != 0 and why in res.output, (extra, res.output)


def test_the_seed_carries_sources_and_effective_dates(db_path: Path) -> None:
    from ingestd.store.connection import connect

    conn = connect(db_path)
    from ingestd.store.migrate import migrate

    migrate(conn)
    rows = conn.execute(
        "SELECT model, bucket, effective_from, long_context_threshold, long_context_usd_per_mtok, speed_multipliers,"
        " web_search_usd_per_request, source FROM model_pricing WHERE effective_from > '2025'"
    ).fetchall()
    tiers = {(r[0], r[1]): r[3:5] for r in rows if r[3] is not None}
    assert tiers[(SONNET, "input")] == (200_000, 6) and tiers[(SONNET, "output")] == (200_000, 22.5)
    assert tiers[("claude-sonnet-4-20250514", "cache_write_1h")] == (200_000, 12)
    assert {r[5] for r in rows if r[0] == OPUS and r[5]} == {'{"fast": 6}'}
    fees = {r[0] for r in rows if r[6] == 0.01 and r[1] == "output"}
    assert SONNET in fees and OPUS in fees and "claude-haiku-4-5-20251001" in fees
    assert all("platform.claude.com/docs/en/about-claude/pricing" in r[7] for r in rows)
