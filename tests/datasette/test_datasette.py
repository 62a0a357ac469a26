"""A real Datasette opens the database (beside a running daemon too) with `ingestd db datasette-config`'s
metadata: its canned queries agree with ingestd's own answers on the real corpus."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def test_storage_tables_are_hidden_and_the_projections_described(site: tuple[Path, Path]) -> None:
    db, meta = site
    doc = get(db, meta, "/ingestd.json")
    tables = {t["name"]: t for t in doc["tables"]}
    assert tables["payload_blocks"]["hidden"] and tables["search_fts_data"]["hidden"]
    assert not tables["sessions"]["hidden"] and not tables["search_docs"]["hidden"]


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
