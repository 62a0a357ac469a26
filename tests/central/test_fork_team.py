"""A fork in team mode: the central projector writes the same ``fork`` edge as the local store
(host and instance of the machine that logged the fork), and replays it identically; the parent
and the fork shipped by two hosts, in either order, give one edge."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import psycopg

from ingestd.central.check import replay
from ingestd.central.pg import PgReadConn
from ingestd.central.pg import connect as pg_connect
from ingestd.report.tree import tree_report
from tests.central.support import local_db, project, ship_all
from tests.report.test_forks import BOUNDARY, FORK, FORK_DIR, PARENT

EDGE = "SELECT session_id, parent_agent_id, child_agent_id, source, instance, host_id, created_at, tool_use_id"


def _root(base: Path, names: list[str]) -> Path:
    root = base / "projects" / "-home-user-proj"
    root.mkdir(parents=True)
    for name in names:
        shutil.copy(FORK_DIR / "-home-user-proj" / name, root / name)
    return base / "projects"


def _central_edges(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as c:
        return sorted(c.execute(f"{EDGE} FROM orchestration_edges WHERE source = 'fork'").fetchall())


def test_the_central_store_writes_the_local_fork_edge(tmp_path: Path, pg_url: str) -> None:
    local = local_db(tmp_path / "a.db", [_root(tmp_path, [f"{PARENT}.jsonl", f"{FORK}.jsonl"])], "host-a")
    mine = sorted(local.execute(f"{EDGE} FROM orchestration_edges WHERE source = 'fork'"))
    assert [(e[0], e[1], e[2], e[5]) for e in mine] == [(FORK, PARENT, FORK, "host-a")]
    ship_all(local, pg_url)
    project(pg_url)
    assert _central_edges(pg_url) == mine
    pg = pg_connect(pg_url, autocommit=True)
    try:
        doc = tree_report(PgReadConn(pg), FORK)
        assert doc["forked_from"] == {"session_id": PARENT, "evidence": "compaction_root", "root_uuid": BOUNDARY}
        assert doc["tree"]["edge"]["source"] == "fork" and doc["tree"]["edge"]["parent_agent_id"] == PARENT
        assert tree_report(PgReadConn(pg), PARENT)["forks"] == [{"session_id": FORK, "evidence": "compaction_root"}]
        outcome = replay(pg)
        assert outcome.ok and outcome.live["orchestration_edges"][0] == 1
    finally:
        pg.close()


def test_a_parent_shipped_after_its_fork_by_another_host_gives_the_edge(tmp_path: Path, pg_url: str) -> None:
    """Host b logged the fork, host a (shipped and projected later) its parent: the parent's fold
    writes the fork's edge, stamped with host b, the fork's own host."""
    b = local_db(tmp_path / "b.db", [_root(tmp_path / "b", [f"{FORK}.jsonl"])], "host-b")
    a = local_db(tmp_path / "a.db", [_root(tmp_path / "a", [f"{PARENT}.jsonl"])], "host-a")
    assert list(b.execute("SELECT count(*) FROM orchestration_edges WHERE source = 'fork'")) == [(0,)]
    ship_all(b, pg_url)
    project(pg_url)
    assert _central_edges(pg_url) == []
    ship_all(a, pg_url)
    project(pg_url)
    edges = _central_edges(pg_url)
    assert [(e[0], e[1], e[2], e[5]) for e in edges] == [(FORK, PARENT, FORK, "host-b")]
    with psycopg.connect(pg_url) as c:
        assert c.execute("SELECT instance FROM hosts WHERE host_id = 'host-b'").fetchone() == (edges[0][4],)
    pg = pg_connect(pg_url, autocommit=True)
    try:
        assert replay(pg).ok
    finally:
        pg.close()


def test_a_tmux_teammate_logged_by_another_host_is_attributed_to_its_lead(tmp_path: Path, pg_url: str) -> None:
    from tests.report import test_tmux_teammates as tm

    a_root, b_root = tmp_path / "a" / "projects", tmp_path / "b" / "projects"
    tm._write(a_root, "-home-u-app", tm.LEAD, tm.lead_records())
    tm._write(b_root, "-home-u-app-relay", tm.MATE, tm.mate_records())
    read = "2026-12-02T00:00:00.000Z"  # the day after the records were written
    a = local_db(tmp_path / "a.db", [a_root], "host-a", now=read)
    b = local_db(tmp_path / "b.db", [b_root], "host-b", now=read)
    ship_all(b, pg_url)
    ship_all(a, pg_url)
    project(pg_url)
    pg = pg_connect(pg_url, autocommit=True)
    try:
        lead = tree_report(PgReadConn(pg), tm.MATE)["teammate_of"]
        assert (lead["session_id"], lead["name"], lead["evidence"]) == (tm.LEAD, "alice", "spawn_name")
        (row,) = tree_report(PgReadConn(pg), tm.LEAD)["teammate_sessions"]
        assert (row["session_id"], row["tokens"]) == (tm.MATE, 130)
    finally:
        pg.close()
