"""Pricing seed, rows and the CLI (SPEC §5.1)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import apsw
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


def test_cli_migrate_twice_says_nothing_pending(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "x.db")
    assert runner.invoke(cli, ["migrate", "--db", db]).exit_code == 0
    res = runner.invoke(cli, ["migrate", "--db", db])
    assert res.exit_code == 0 and "nothing pending" in res.output
    res = runner.invoke(cli, ["migrate", "--status", "--json", "--db", db])
    assert json.loads(res.output)["pending"] == []


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
