"""Small money faults: zero tokens need no rate, unknown hosts are named, price rows shown and
loaded exactly, a new price row that drops a dimension is warned about."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.report.usage import Price, Usage
from ingestd.store.connection import connect

PROJ = Path(__file__).resolve().parents[2] / "fixtures/projects/-home-u-proj"


def test_a_bucket_with_zero_tokens_needs_no_rate() -> None:
    u = Usage()
    rates = {("m", "input", "2026-01-01T00:00:00.000Z"): Price(Decimal(7))}
    u.add("m", "input", "2026-01-01T00:00:00.000Z", 1_000_000, 1, rates)
    u.add("m", "output", "", 0, 1, rates)  # no output rate, but nothing to price
    doc = u.to_json()
    assert doc["cost_complete"] is True and doc["unpriced"] == {}
    assert doc["cost_usd"] == "7"
    u.add("m", "output", "", 3, 1, rates)  # tokens with no rate stay unpriced
    assert u.to_json()["cost_complete"] is False


def _ingested(tmp_path: Path, db_path: Path) -> str:
    proj = tmp_path / "p" / "-proj"
    proj.mkdir(parents=True)
    shutil.copy(PROJ / "44444444-4444-4444-8444-444444444444.jsonl", proj)
    res = CliRunner().invoke(cli, ["ingest", "--projects", str(tmp_path / "p"), "--db", str(db_path)])
    assert res.exit_code == 0, res.output
    return str(connect(db_path).execute("SELECT value FROM meta WHERE key = 'host_id'").fetchall()[0][0])


def test_cost_for_an_unknown_host_is_refused_naming_the_known_ones(tmp_path: Path, db_path: Path) -> None:
    host = _ingested(tmp_path, db_path)
    res = CliRunner().invoke(cli, ["cost", "--db", str(db_path), "--host", "nosuch"])
    assert res.exit_code == 2  # as `tree` with an unknown session
    assert "no host 'nosuch'" in res.stderr and host in res.stderr
    ok = CliRunner().invoke(cli, ["cost", "--db", str(db_path), "--host", host, "--json"])
    assert ok.exit_code == 0, ok.output
    assert orjson.loads(ok.stdout)["tokens"] > 0
    tree = CliRunner().invoke(cli, ["tree", "--db", str(db_path), "nosuch"])
    assert tree.exit_code == res.exit_code


def _cli(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def test_pricing_list_shows_effective_times_in_full(db_path: Path) -> None:
    for at in ("2026-03-01T09:30:15Z", "2026-03-01T09:30:45.250Z"):
        assert (
            _cli("pricing", "set", "m-x", "--db", str(db_path), "--effective-from", at, "--input", "1").exit_code == 0
        )
    out = _cli("pricing", "list", "--db", str(db_path), "--model", "m-x").output
    assert "2026-03-01 09:30:15" in out and "2026-03-01 09:30:45.250" in out


def test_pricing_load_refuses_two_rows_that_price_one_key_differently(db_path: Path, tmp_path: Path) -> None:
    row = {"model": "m-y", "effective_from": "2026-03-01", "rates": {"input": 1}}
    f = tmp_path / "prices.json"
    f.write_bytes(orjson.dumps([row, {**row, "rates": {"input": 2}}]))
    res = _cli("pricing", "load", "--db", str(db_path), str(f))
    assert res.exit_code == 2
    assert "price rows 0 and 1 conflict" in res.stderr and "m-y input" in res.stderr
    assert connect(db_path).execute("SELECT count(*) FROM model_pricing WHERE model = 'm-y'").fetchall() == [(0,)]
    f.write_bytes(orjson.dumps([row, row]))  # the same row twice is one row
    same = _cli("pricing", "load", "--db", str(db_path), str(f))
    assert same.exit_code == 0 and "wrote 1 price row" in same.output


def test_pricing_set_warns_when_a_new_row_drops_a_dimension(db_path: Path) -> None:
    first = _cli(
        "pricing", "set", "m-z", "--db", str(db_path), "--effective-from", "2026-01-01",
        "--input", "3", "--output", "15", "--web-search-fee", "0.01", "--speed", "turbo=2",
        "--long-context-threshold", "200000", "--long-context", "input=6", "--long-context", "output=22.5",
    )  # fmt: skip
    assert first.exit_code == 0 and "warning" not in first.stderr
    res = _cli("pricing", "set", "m-z", "--db", str(db_path), "--effective-from", "2026-06-01", "--output", "16")
    assert res.exit_code == 0
    err = " ".join(res.stderr.split())
    assert "m-z output from 2026-06-01T00:00:00.000Z drops its long-context tier (over 200000 tokens)" in err
    assert "drops its speed multipliers for turbo" in err and "drops its web-search fee" in err
    assert "m-z input" not in err  # no input row given: nothing dropped there
    kept = _cli(
        "pricing", "set", "m-z", "--db", str(db_path), "--effective-from", "2026-07-01", "--output", "16",
        "--web-search-fee", "0.01", "--speed", "turbo=2", "--long-context-threshold", "1", "--long-context", "output=1",
    )  # fmt: skip
    assert kept.exit_code == 0 and "warning" not in kept.stderr
