"""``ingestd pricing list | set | load --store URL``: the central store's prices are managed where
they are used (a regression: no ``--store``, while ``cost --store`` said to add a row with ``pricing set``,
which changed only the local database)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from tests.central.support import local_db, project, ship_all
from tests.stores.test_prices import SID, message, usage

NEW = "claude-newmodel-9"
ZERO = {"cache_read": "0.1", "cache_write_5m": 1, "cache_write_1h": 2}  # priced, no tokens here


def _run(*args: str) -> Any:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res


def _cost(pg_url: str) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads(_run("cost", "--store", pg_url, "--json").stdout)
    return doc


def test_prices_are_listed_set_and_loaded_in_the_store_and_reprice_its_usage(tmp_path: Path, pg_url: str) -> None:
    root = tmp_path / "projects"
    (root / "-w").mkdir(parents=True)
    line = orjson.dumps(message("m-1", NEW, usage(inp=1_000_000, out=2_000_000))) + b"\n"
    (root / "-w" / f"{SID}.jsonl").write_bytes(line)
    db = tmp_path / "a.db"
    local = local_db(db, [root], "host-a")
    ship_all(local, pg_url)
    local.close()
    project(pg_url)
    assert _cost(pg_url)["unpriced"][NEW]["tokens"] == 3_000_000
    hint = _run("cost", "--store", pg_url).output
    assert "add one with `ingestd pricing set --store URL`" in " ".join(hint.split())

    set_ = _run("pricing", "set", NEW, "--store", pg_url, "--effective-from", "2020-01-01", "--input", "1")
    assert "wrote 1 price row" in set_.output
    listed = orjson.loads(_run("pricing", "list", "--store", pg_url, "--model", NEW, "--json").stdout)["rows"]
    assert [(r["bucket"], r["usd_per_mtok"], r["effective_from"]) for r in listed] == [
        ("input", "1.0", "2020-01-01T00:00:00.000Z")  # as the local list prints it
    ]
    prices = tmp_path / "prices.json"
    row = {"model": NEW, "effective_from": "2020-01-01", "rates": {"output": 2, **ZERO}}
    prices.write_bytes(orjson.dumps([row]))
    assert "wrote 4 price rows" in _run("pricing", "load", str(prices), "--store", pg_url).output
    doc = _cost(pg_url)
    assert doc["unpriced"] == {} and doc["cost_usd"] == "5"  # 1 MTok x $1 + 2 MTok x $2, re-priced in place
    # the local database is untouched: its usage stays unpriced
    assert orjson.loads(_run("pricing", "list", "--db", str(db), "--model", NEW, "--json").stdout)["rows"] == []
    local_cost = orjson.loads(_run("cost", "--db", str(db), "--json").stdout)
    assert NEW in local_cost["unpriced"]
    assert "`ingestd pricing set`" in _run("cost", "--db", str(db)).output
    # a new store row that drops the fee the store's row before it had is warned about, as locally
    fee = ("--output", "2", "--web-search-fee", "0.01")
    _run("pricing", "set", NEW, "--store", pg_url, "--effective-from", "2020-06-01", *fee)
    dropped = _run("pricing", "set", NEW, "--store", pg_url, "--effective-from", "2021-01-01", "--output", "2")
    assert "drops its web-search fee that the row from 2020-06-01T00:00:00.000Z had" in " ".join(dropped.stderr.split())
