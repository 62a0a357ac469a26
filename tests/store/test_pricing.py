"""Pricing seed, rows and the CLI (SPEC §5.1)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import apsw
import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.errors import InputError
from ingestd.store import pricing

BUCKETS = set(pricing.BUCKETS)


def test_seed_has_all_five_buckets_for_every_model(db: apsw.Connection) -> None:
    rows = pricing.list_prices(db)
    by_model: dict[str, set[str]] = {}
    for r in rows:
        by_model.setdefault(r.model, set()).add(r.bucket)
    assert by_model and all(b == BUCKETS for b in by_model.values())
    assert "<synthetic>" not in by_model


def test_seed_covers_every_model_in_the_corpus_and_generator(db: apsw.Connection, corpus: Path) -> None:
    seen: set[str] = set()
    for path in corpus.rglob("*.jsonl"):
        seen.update(re.findall(r'"model":\s*"(claude-[^"]+)"', path.read_text(errors="replace")))
    gen = (corpus.parent / "tools" / "gen_corpus.py").read_text()
    seen.update(re.findall(r'\("(claude-[a-z0-9-]+)", 0\.\d+\)', gen))
    priced = {r.model for r in pricing.list_prices(db)}
    assert seen and seen <= priced, seen - priced


def test_rates_are_exact_decimals(db: apsw.Connection) -> None:
    """Seeded rates read back as exact decimals (0.3, not 0.29999...)."""
    rates = {(r.model, r.bucket): r.usd_per_mtok for r in pricing.list_prices(db)}
    assert rates[("claude-sonnet-4-5-20250929", "cache_read")] == Decimal("0.3")
    assert rates[("claude-opus-4-6", "cache_write_1h")] == Decimal("10")


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({"model": "", "effective_from": "2025-01-01", "rates": {"input": 1}}, "model"),
        ({"model": "m", "effective_from": "2025-01-01T00:00:00", "rates": {"input": 1}}, "effective_from"),
        ({"model": "m", "effective_from": "2025-01-01", "rates": {"inputs": 1}}, "unknown bucket"),
        ({"model": "m", "effective_from": "2025-01-01", "rates": {"input": -1}}, "from 0 to"),
        ({"model": "m", "effective_from": "2025-01-01", "rates": {"input": 1e300}}, "from 0 to"),
        ({"model": "m", "effective_from": "2025-01-01", "rates": {"input": "1e400"}}, "from 0 to"),
        ({"model": "m", "effective_from": "2025-01-01", "rates": {"input": "NaN"}}, "from 0 to"),
        ({"model": "m", "effective_from": "2025-01-01", "rates": {"input": "abc"}}, "not a number"),
        ({"model": "m", "effective_from": "2025-01-01", "rates": {"input": True}}, "must be a number"),
    ],
)
def test_bad_price_rows_are_refused(doc: dict[str, object], match: str) -> None:
    with pytest.raises(InputError, match=match):
        pricing.parse_rows([doc], default_source="t")


def test_cli_set_then_list_json(db_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(
        cli,
        [
            "pricing",
            "set",
            "new-model",
            "--effective-from",
            "2025-01-01",
            "--input",
            "1.5",
            "--db",
            str(db_path),
        ],
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["pricing", "list", "--model", "new-model", "--json", "--db", str(db_path)])
    doc = json.loads(res.output)
    assert doc["rows"] == [
        {
            "model": "new-model",
            "bucket": "input",
            "usd_per_mtok": "1.5",
            "effective_from": "2025-01-01T00:00:00.000Z",
            "source": "operator",
            "verified_at": doc["rows"][0]["verified_at"],
            "long_context_threshold": None,
            "long_context_usd_per_mtok": None,
            "speed_multipliers": {},
            "web_search_usd_per_request": None,
            "geo_multipliers": {},
        }
    ]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", doc["rows"][0]["verified_at"])


def test_cli_load_file_and_bad_file(db_path: Path, tmp_path: Path) -> None:
    good = tmp_path / "p.json"
    good.write_text(json.dumps([{"model": "m2", "effective_from": "2025-02-01Z"[:10], "rates": {"output": 4}}]))
    runner = CliRunner()
    res = runner.invoke(cli, ["pricing", "load", str(good), "--db", str(db_path)])
    assert res.exit_code == 0, res.output
    listed = json.loads(runner.invoke(cli, ["pricing", "list", "--model", "m2", "--json", "--db", str(db_path)]).output)
    assert [(r["bucket"], Decimal(r["usd_per_mtok"]), r["effective_from"]) for r in listed["rows"]] == [
        ("output", Decimal(4), "2025-02-01T00:00:00.000Z")
    ]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = runner.invoke(cli, ["pricing", "load", str(bad), "--db", str(db_path)])
    assert res.exit_code == 2
    assert "not valid JSON" in res.output


@pytest.mark.parametrize(
    ("doc", "got"),
    [({}, "no keys"), ({"prices": []}, "'prices'"), ("rows", "a string"), (3, "a number"), (None, "null")],
)
def test_a_price_file_that_is_not_rows_says_what_was_expected(doc: object, got: str) -> None:
    with pytest.raises(InputError) as e:
        pricing.parse_rows(doc, default_source="t")
    assert e.value.message.startswith("expected a JSON array of price rows")
    assert got in e.value.message
    assert "price row 0" not in e.value.message


def test_a_single_row_object_and_the_list_json_shape_still_load() -> None:
    row = {"model": "m", "effective_from": "2025-01-01", "rates": {"input": 1}}
    listed = {"rows": [{"model": "m", "bucket": "input", "usd_per_mtok": "1", "effective_from": "2025-01-01"}]}
    for doc in (row, listed):
        got = [(r.model, r.bucket, r.usd_per_mtok) for r in pricing.parse_rows(doc, default_source="t")]
        assert got == [("m", "input", Decimal("1"))]


def test_pricing_set_names_the_option_not_a_price_row(tmp_path: Path) -> None:
    """A bad value on ``pricing set`` is named by its option; only a price file names its rows."""
    db = str(tmp_path / "p.db")
    base = ["pricing", "set", "m-1", "--db", db, "--effective-from", "2026-01-01"]
    cases = {
        ("--input", "-3"): "--input: rate for input (USD per MTok) must be a number from 0",
        ("--cache-write-5m", "x"): "--cache-write-5m: rate for cache_write_5m (USD per MTok) is not a number",
        ("--output", "1", "--speed", "fast=-1"): "--speed fast=X: speed multiplier for 'fast' must be a number",
        ("--output", "1", "--long-context-threshold", "5", "--long-context", "output=-2"): "--long-context output=USD:",
        ("--output", "1", "--long-context", "output=2"): "--long-context-threshold: long_context threshold",
        ("--input", "1", "--web-search-fee", "0.01"): "--web-search-fee: a server tool fee goes on the row's output",
        ("--output", "1", "--web-search-fee", "-1"): "--web-search-fee: web search fee must be a number",
    }
    for args, want in cases.items():
        res = CliRunner().invoke(cli, [*base, *args])
        assert res.exit_code == 2, (args, res.output)
        assert "price row" not in res.stderr, (args, res.stderr)
        assert want in res.stderr, (args, res.stderr)
    res = CliRunner().invoke(cli, ["pricing", "set", "m-1", "--db", db, "--effective-from", "never", "--input", "1"])
    assert res.exit_code == 2 and "--effective-from: 'effective_from' must be a date" in res.stderr
    # a price file still names its rows
    bad = tmp_path / "p.json"
    bad.write_bytes(orjson.dumps([{"model": "m", "effective_from": "2026-01-01", "rates": {"input": -3}}]))
    res = CliRunner().invoke(cli, ["pricing", "load", str(bad), "--db", db])
    assert res.exit_code == 2 and "price row 0: rate for input (USD per MTok) must be a number" in res.stderr
