"""A real Datasette opens the database (beside a running daemon too) with `ingestd db datasette-config`'s
metadata: its canned queries agree with ingestd's own answers on the real corpus."""

from __future__ import annotations

import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from tests.conftest import CORPUS
from tests.reliability.daemon import Daemon
from tests.support import wait_for

PROJECTS = CORPUS / "claude-projects"
DATASETTE = shutil.which("datasette", path=str(Path(sys.executable).parent))
pytestmark = [
    pytest.mark.skipif(DATASETTE is None, reason="datasette is not installed (pip install -e '.[dev]' installs it)"),
    pytest.mark.skipif(not PROJECTS.is_dir(), reason=f"real corpus not found at {PROJECTS}"),
]
BUCKETS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


def run(*args: str) -> Any:
    r = CliRunner().invoke(cli, list(args))
    assert r.exit_code == 0, r.output
    return r


def get(db: Path, meta: Path, path: str) -> Any:
    """``datasette DB -m META --get PATH`` (Datasette's own client: no server, no port)."""
    assert DATASETTE is not None
    r = subprocess.run([DATASETTE, str(db), "-m", str(meta), "--get", path], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return orjson.loads(r.stdout)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("datasette")
    db = tmp / "ingestd.db"
    run("ingest", "--db", str(db), "--projects", str(PROJECTS))
    meta = tmp / "metadata.json"
    run("db", "datasette-config", "--db", str(db), "--out", str(meta))
    return db, meta


def test_db_path_prints_the_resolved_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert run("db", "path", "--db", "x.db").output.strip() == str(tmp_path / "x.db")
    monkeypatch.setenv("INGESTD_DB", str(tmp_path / "env.db"))
    assert run("db", "path").output.strip() == str(tmp_path / "env.db")


def test_the_tokens_per_day_query_totals_equal_cost_json(site: tuple[Path, Path]) -> None:
    db, meta = site
    rows = get(db, meta, "/ingestd/tokens_per_day.json?_shape=array&_size=max")
    cost = orjson.loads(run("cost", "--db", str(db), "--json").stdout)
    assert {b: sum(r[b] for r in rows) for b in BUCKETS} == cost["totals"]
    assert sum(r["messages"] for r in rows) == cost["billed_messages"]


def test_tool_calls_and_search_agree_with_ingestd(site: tuple[Path, Path]) -> None:
    db, meta = site
    rows = get(db, meta, "/ingestd/tool_calls_by_tool.json?_shape=array&_size=max")
    status = orjson.loads(run("status", "--db", str(db), "--json", "--no-stat").stdout)
    assert sum(r["calls"] for r in rows) == status["rows"]["tool_calls"]
    ours = orjson.loads(run("search", "--db", str(db), "--json", "pytest").stdout)["results"]
    assert len(ours) == 1
    theirs = get(db, meta, "/ingestd/search.json?q=pytest&_shape=array")
    assert [(r["session_id"], r["kind"], r["label"]) for r in theirs] == [
        (r["session_id"], r["kind"], r["label"]) for r in ours
    ]
    table = get(db, meta, "/ingestd/search_docs.json?_search=pytest&_shape=array")
    assert [r["doc_id"] for r in table] == [r["doc_id"] for r in ours]


@pytest.mark.parametrize("q", ["pytest's", "foo-bar", '"unclosed', "NEAR(", "a:b", "*", "AND"])
def test_the_canned_search_takes_any_words_as_ingestd_search_does(site: tuple[Path, Path], q: str) -> None:
    db, meta = site
    r = CliRunner().invoke(cli, ["search", "--db", str(db), "--json", "--limit", "100", q])
    ours = orjson.loads(r.stdout)["results"] if r.exit_code == 0 else []
    theirs = get(db, meta, "/ingestd/search.json?" + urlencode({"q": q, "_shape": "array"}))
    assert [(d["session_id"], d["kind"], d["label"]) for d in theirs] == [
        (d["session_id"], d["kind"], d["label"]) for d in ours
    ]


def test_an_empty_canned_search_finds_nothing_and_search_fts_takes_fts5_syntax(site: tuple[Path, Path]) -> None:
    db, meta = site
    assert get(db, meta, "/ingestd/search.json?q=&_shape=array") == []
    ours = orjson.loads(run("search", "--db", str(db), "--json", "--limit", "100", "--fts", "pytest OR ruff").stdout)[
        "results"
    ]
    theirs = get(db, meta, "/ingestd/search_fts.json?" + urlencode({"q": "pytest OR ruff", "_shape": "array"}))
    assert len(ours) >= 1
    assert {(d["session_id"], d["kind"], d["label"]) for d in theirs} == {
        (d["session_id"], d["kind"], d["label"]) for d in ours
    }


def test_storage_tables_are_hidden_and_the_projections_described(site: tuple[Path, Path]) -> None:
    db, meta = site
    doc = get(db, meta, "/ingestd.json")
    tables = {t["name"]: t for t in doc["tables"]}
    assert tables["payload_blocks"]["hidden"] and tables["search_fts_data"]["hidden"]
    assert all(tables[t]["hidden"] for t in ("log_rows", "log_origins", "log_sessions", "log_kinds", "search_doc_rows"))
    assert not tables["sessions"]["hidden"]
    # the log and the search documents are views over them, their rows as written
    assert {"events_raw", "search_docs"} <= {v["name"] for v in doc["views"]}
    rows = get(db, meta, "/ingestd/events_raw.json?_shape=array&_size=3&_col=idempotency_key&_col=origin")
    assert len(rows) == 3 and all(r["idempotency_key"].startswith("j:") for r in rows)


def test_datasette_reads_the_live_database_beside_the_daemon(tmp_path: Path, site: tuple[Path, Path]) -> None:
    corpus_db, _ = site
    want = orjson.loads(run("status", "--db", str(corpus_db), "--json", "--no-stat").stdout)["rows"]["sessions"]
    d = Daemon.in_dir(tmp_path)
    shutil.copytree(PROJECTS, d.root, dirs_exist_ok=True)
    d.start()
    try:
        meta = tmp_path / "metadata.json"
        run("db", "datasette-config", "--db", str(d.db), "--out", str(meta))
        name = d.db.stem
        got = wait_for(
            "the daemon's sessions in Datasette",
            lambda: len(get(d.db, meta, f"/{name}/sessions.json?_shape=array&_size=max")) == want,
            timeout_s=120,
        )
        assert got
        rows = get(d.db, meta, f"/{name}/tokens_per_session.json?_shape=array&_size=max")
        assert rows and all(r["tokens"] > 0 for r in rows)
    finally:
        d.stop()


# ---- cost through the plugin: ingestd's rule as SQL functions ------------------------------------------


def test_the_plugin_is_what_datasette_loads(site: tuple[Path, Path]) -> None:
    assert DATASETTE is not None
    r = subprocess.run([DATASETTE, "plugins"], capture_output=True, timeout=120)
    plugins = {p["name"]: p for p in orjson.loads(r.stdout)}
    assert {"prepare_connection", "canned_queries"} <= set(plugins["ingestd"]["hooks"])


def test_cost_per_day_and_model_equal_cost_json_to_the_last_digit(site: tuple[Path, Path]) -> None:
    db, meta = site
    rows = get(db, meta, "/ingestd/cost_per_day.json?_shape=array&_size=max")
    cost = orjson.loads(run("cost", "--db", str(db), "--json").stdout)
    assert sum((Decimal(r["cost_usd"]) for r in rows), Decimal(0)) == Decimal(cost["cost_usd"]) > 0
    assert sum(r["tokens"] for r in rows) == cost["tokens"]
    assert all(r["unpriced_tokens"] == 0 for r in rows) and cost["cost_complete"]
    by_model = {
        r["key"]: r for r in orjson.loads(run("cost", "--db", str(db), "--by", "model", "--json").stdout)["rows"]
    }
    theirs = get(db, meta, "/ingestd/cost_per_model.json?_shape=array&_size=max")
    assert {r["model"]: Decimal(r["cost_usd"]) for r in theirs} == {
        m: Decimal(r["cost_usd"]) for m, r in by_model.items()
    }
    sessions = get(db, meta, "/ingestd/cost_per_session.json?_shape=array&_size=max")
    per_session = orjson.loads(run("cost", "--db", str(db), "--by", "session", "--json").stdout)["rows"]
    assert {r["session_id"]: Decimal(r["cost_usd"]) for r in sessions} == {
        r["key"]: Decimal(r["cost_usd"]) for r in per_session
    }


def _assistant(model: str, n: int) -> bytes:
    return orjson.dumps(
        {
            "type": "assistant",
            "uuid": f"dsu-{n}",
            "sessionId": "d5e77e00-0000-4000-8000-000000000001",
            "timestamp": "2026-11-30T10:00:00.000Z",
            "requestId": f"req_ds_{n}",
            "message": {
                "id": f"msg_ds_{n}",
                "model": model,
                "role": "assistant",
                "content": [{"type": "text", "text": "x"}],
                "usage": {"input_tokens": 1000, "output_tokens": 2000, "cache_read_input_tokens": 0},
            },
        }
    )


def test_unpriced_usage_is_named_never_zero_and_a_new_price_shows(tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-p"
    root.mkdir(parents=True)
    (root / "d5e77e00-0000-4000-8000-000000000001.jsonl").write_bytes(
        _assistant("claude-opus-4-6", 1) + b"\n" + _assistant("claude-nova-9", 2) + b"\n"
    )
    db = tmp_path / "u.db"
    run("ingest", "--db", str(db), "--projects", str(tmp_path / "projects"))
    meta = tmp_path / "metadata.json"
    run("db", "datasette-config", "--db", str(db), "--out", str(meta))
    rows = {r["model"]: r for r in get(db, meta, "/u/cost_per_model.json?_shape=array")}
    # Opus 4.6: 1,000 input at $5/MTok + 2,000 output at $25/MTok = 0.005 + 0.05
    assert Decimal(rows["claude-opus-4-6"]["cost_usd"]) == Decimal("0.055")
    assert rows["claude-nova-9"]["cost_usd"] == "0" and rows["claude-nova-9"]["unpriced_tokens"] == 3000
    run(
        "pricing", "set", "claude-nova-9", "--db", str(db), "--effective-from", "2026-01-01",
        "--input", "1", "--output", "2", "--cache-read", "0.1", "--cache-write-5m", "1.25", "--cache-write-1h", "2",
    )  # fmt: skip
    rows = {r["model"]: r for r in get(db, meta, "/u/cost_per_model.json?_shape=array")}
    # 1,000 at $1/MTok + 2,000 at $2/MTok = 0.001 + 0.004
    assert (
        Decimal(rows["claude-nova-9"]["cost_usd"]) == Decimal("0.005") and rows["claude-nova-9"]["unpriced_tokens"] == 0
    )


def test_a_database_that_is_not_ingestd_s_gets_no_functions(tmp_path: Path) -> None:
    import sqlite3

    from ingestd.report.datasette_plugin import register

    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("create table t (x)")
    assert register(other) is False
    with pytest.raises(sqlite3.OperationalError, match="no such function"):
        other.execute("select ingestd_usd_sum('1')")


def test_a_running_datasette_reads_a_new_price_within_the_ttl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from ingestd.report import datasette_plugin

    root = tmp_path / "projects" / "-p"
    root.mkdir(parents=True)
    (root / "d5e77e00-0000-4000-8000-000000000001.jsonl").write_bytes(_assistant("claude-nova-9", 1) + b"\n")
    db = tmp_path / "u.db"
    run("ingest", "--db", str(db), "--projects", str(tmp_path / "projects"))
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    assert datasette_plugin.register(conn)
    total = f"select {datasette_plugin._COST}, {datasette_plugin._UNPRICED} from token_usage_rollup"
    assert conn.execute(total).fetchone() == ("0", 3000)
    run(
        "pricing", "set", "claude-nova-9", "--db", str(db), "--effective-from", "2026-01-01",
        "--input", "1", "--output", "2", "--cache-read", "0.1", "--cache-write-5m", "1.25", "--cache-write-1h", "2",
    )  # fmt: skip
    assert conn.execute(total).fetchone() == ("0", 3000), "within the TTL, the rows read before"
    monkeypatch.setattr(datasette_plugin, "RATES_TTL_S", 0.0)
    assert conn.execute(total).fetchone() == ("0.005", 0)


def test_each_rollup_row_is_priced_once_per_query(site: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from ingestd.report import datasette_plugin
    from ingestd.report.usage import Usage

    db, _ = site
    calls = 0
    real = Usage.add_messages

    def counted(self: Usage, *args: Any, **kw: Any) -> None:
        nonlocal calls
        calls += 1
        real(self, *args, **kw)

    monkeypatch.setattr(Usage, "add_messages", counted)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert datasette_plugin.register(conn)
        (rows,) = conn.execute("SELECT count(*) FROM token_usage_rollup").fetchone()
        out = conn.execute(datasette_plugin.QUERIES["cost_per_model"]["sql"]).fetchall()
    finally:
        conn.close()
    assert out and calls == rows  # its cost and its unpriced tokens from one pricing
