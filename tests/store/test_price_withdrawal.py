"""A price version that withdraws a dimension (SPEC §5.1): "this version has none" (``null`` in
JSON, ``--no-...`` on ``pricing set``) differs from "not given", which warns, truthfully.

The 4.6 models' >200K premium ended with 1M context GA on 2026-03-13: a row from that day without
the tier prices long prompts at the standard rate; leaving the tier out by accident does the same,
so the warning says exactly that and how to say "withdrawn". A speed, geo or fee left out is
unpriced from the new row on; withdrawn, it costs the standard rate (multiplier 1, fee 0).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, resolve_zone
from ingestd.store.connection import connect
from tests.store.test_price_dimensions import ingest
from tests.stores.test_prices import message, usage

ALL = Window(None, None)
UTC = resolve_zone("UTC", {})
TIER = ("--long-context-threshold", "200000", "--long-context", "input=6", "--long-context", "output=22.5")


def _cli(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def _set(db: Path, when: str, *extra: str) -> Any:
    res = _cli("pricing", "set", "m-w", "--db", str(db), "--effective-from", when, "--input", "3", "--output", "15",
               *extra)  # fmt: skip
    assert res.exit_code == 0, res.output
    return res


def test_a_tier_left_out_warns_what_happens_and_how_to_withdraw_it(db_path: Path) -> None:
    _set(db_path, "2026-01-01", *TIER)
    err = " ".join(_set(db_path, "2026-03-13").stderr.split())
    assert "m-w input from 2026-03-13T00:00:00.000Z drops its long-context tier (over 200000 tokens)" in err
    # true: such prompts are priced flat from then on, not left unpriced
    assert "prompts over 200000 tokens are priced at the standard rate from then on" in err
    assert "unpriced" not in err.split("long-context tier")[1].split("warning")[0]
    assert "--no-long-context" in err and '"long_context": null' in err


def test_a_withdrawn_tier_prices_flat_from_its_date_without_a_warning(db_path: Path) -> None:
    _set(db_path, "2026-01-01", *TIER)
    res = _set(db_path, "2026-03-13", "--no-long-context")
    assert "warning" not in res.stderr
    conn = connect(db_path)
    # prompt 250,000 > 200,000, output 1,000; each message's own day
    ingest(
        conn,
        [
            message("m-before", "m-w", usage(inp=250_000, out=1_000), ts="2026-03-12T12:00:00.000Z"),
            message("m-after", "m-w", usage(inp=250_000, out=1_000), ts="2026-03-13T12:00:00.000Z"),
        ],
    )
    doc = cost_report(conn, by="day", window=ALL, zone=UTC)
    days = {r["day"]: Decimal(r["cost_usd"]) for r in doc["rows"]}
    assert days["2026-03-12"] == Decimal(250_000 * 6 + 1_000 * Decimal("22.5")).scaleb(-6) == Decimal("1.5225")
    assert days["2026-03-13"] == Decimal(250_000 * 3 + 1_000 * 15).scaleb(-6) == Decimal("0.765")
    assert doc["cost_complete"] is True


def test_json_null_withdraws_and_load_answers_its_rows_and_warnings(db_path: Path, tmp_path: Path) -> None:
    _set(db_path, "2026-01-01", *TIER, "--speed", "fast=6", "--web-search-fee", "0.01", "--geo", "us=1.1")
    f = tmp_path / "ga.json"
    f.write_text(
        orjson.dumps(
            [
                {
                    "model": "m-w",
                    "effective_from": "2026-03-13",
                    "rates": {"input": 3, "output": 15},
                    "long_context": None,
                    "speed_multipliers": {"fast": None},
                    "geo_multipliers": {"us": 1.1},
                    "server_tool_fees": None,
                }
            ]
        ).decode()
    )
    res = _cli("pricing", "load", str(f), "--db", str(db_path), "--json")
    assert res.exit_code == 0, res.output
    assert "warning" not in res.stderr
    doc = orjson.loads(res.stdout)
    assert doc["written"] == 2 and doc["warnings"] == []
    out = {r["bucket"]: r for r in doc["rows"]}["output"]
    assert out["long_context_threshold"] is None
    assert out["speed_multipliers"] == {"fast": "1"}  # fast costs the standard rate in this version
    assert out["geo_multipliers"] == {"us": "1.1"}
    assert out["web_search_usd_per_request"] == "0"  # searches have no fee in this version


def test_a_multiplier_or_fee_left_out_is_unpriced_and_the_warning_says_so(db_path: Path) -> None:
    _set(db_path, "2026-01-01", "--speed", "fast=6", "--web-search-fee", "0.01", "--geo", "us=1.1")
    res = _cli("pricing", "set", "m-w", "--db", str(db_path), "--effective-from", "2026-03-13", "--output", "15",
               "--json")  # fmt: skip
    err = " ".join(res.stderr.split())
    assert "drops its speed multipliers for fast" in err and "usage at speed fast is unpriced from then on" in err
    assert "drops its inference geo multipliers for us" in err and "inference_geo us is unpriced" in err
    assert "drops its web-search fee" in err and "web searches are unpriced from then on" in err
    assert len(orjson.loads(res.stdout)["warnings"]) == 3
    conn = connect(db_path)
    ingest(conn, [message("m-us", "m-w", usage(out=1_000, inference_geo="us"), ts="2026-03-14T00:00:00.000Z")])
    doc = cost_report(conn, by=None, window=ALL, zone=UTC)
    assert doc["cost_complete"] is False and doc["unpriced"]["m-w"]["reasons"] == ["geo:us"]


def test_geo_options_and_pricing_list(db_path: Path) -> None:
    _set(db_path, "2026-01-01", "--geo", "us=1.1", "--no-geo", "eu")
    listed = orjson.loads(_cli("pricing", "list", "--model", "m-w", "--json", "--db", str(db_path)).stdout)
    geos = {r["bucket"]: {k: Decimal(v) for k, v in r["geo_multipliers"].items()} for r in listed["rows"]}
    assert geos == {"input": {"eu": 1, "us": Decimal("1.1")}, "output": {"eu": 1, "us": Decimal("1.1")}}
    text = _cli("pricing", "list", "--model", "m-w", "--db", str(db_path)).stdout
    assert "geo us x1.1" in text
    conn = connect(db_path)
    ingest(conn, [message("m-g", "m-w", usage(inp=1_000_000, out=0, inference_geo="us"))])
    assert Decimal(cost_report(conn, by=None, window=ALL, zone=UTC)["cost_usd"]) == Decimal("3.3")  # 3 x 1.1


def test_withdrawing_and_giving_a_dimension_together_is_refused(db_path: Path) -> None:
    res = _cli("pricing", "set", "m-w", "--db", str(db_path), "--effective-from", "2026-01-01", "--input", "3",
               "--no-long-context", *TIER[:2])  # fmt: skip
    assert res.exit_code != 0 and "--no-long-context" in res.stderr
