"""Two machines, one central store (SPEC §13): totals, trees and sessions are exact across hosts.

Host A and host B are two local databases built from the two halves of a projects tree, with one
session on both (``tests.central.support.split_hosts``). Both ship to one real PostgreSQL and the
same projector folds the central log. Run on the real corpus (``../shared/corpus``) and on the
bundled ``fixtures/projects`` (so the property holds on a fresh clone without ``../shared``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from ingestd.central.pg import PgReadConn
from ingestd.central.pg import connect as pg_connect
from ingestd.cli import cli
from ingestd.errors import InputError
from ingestd.report.cost import cost_report
from ingestd.report.sessions import sessions_report
from ingestd.report.tree import tree_report
from ingestd.report.window import make_window, resolve_zone
from tests.central.support import central_log, local_db, local_log, project, ship_all, split_hosts
from tests.conftest import CORPUS, REPO
from tests.pgcluster import Cluster
from tests.usage_rows import BY_BUCKET

ZONE = resolve_zone("UTC", {})
WINDOW = make_window(None, None, ZONE, datetime(2030, 1, 1, tzinfo=UTC))
SOURCES = {"corpus": CORPUS / "claude-projects", "fixtures": REPO / "fixtures" / "projects"}


def build_team(src: Path, tmp_path: Path, url: str, *, subagents: bool = False) -> dict[str, Any]:
    """Two hosts and the one-machine reference (``union``), shipped and projected."""
    if not src.is_dir():
        pytest.skip(f"real corpus not found at {src}")
    hosts = split_hosts(src, tmp_path / "roots", subagents=subagents)
    a = local_db(tmp_path / "a.db", [hosts.a], "host-a")
    b = local_db(tmp_path / "b.db", [hosts.b], "host-b")
    union = local_db(tmp_path / "union.db", [hosts.a, hosts.b], "host-u")
    ship_all(a, url, batch_rows=997)
    ship_all(b, url)
    project(url)
    central = PgReadConn(pg_connect(url, autocommit=True))
    return {"a": a, "b": b, "union": union, "url": url, "shared": hosts.shared, "central": central}


@pytest.fixture(scope="session")
def _teams() -> Iterator[dict[str, dict[str, Any]]]:
    """Each source's team, built the first time a test asks for it and kept for the run (under
    xdist the tests of the two sources interleave; rebuilding on every switch cost 15 s each)."""
    teams: dict[str, dict[str, Any]] = {}
    yield teams
    for t in teams.values():
        t["central"].close()
        for k in ("a", "b", "union"):
            t[k].close()


@pytest.fixture(scope="module", params=sorted(SOURCES))
def team(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    pg_cluster: Cluster,
    _teams: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """Built once per source: the tests below only read (re-ship adds nothing)."""
    if request.param not in _teams:
        name = f"team_{request.param}"
        with psycopg.connect(pg_cluster.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        built = build_team(SOURCES[request.param], tmp_path_factory.mktemp(name), pg_cluster.url(name))
        _teams[request.param] = {**built, "source": request.param}
    return _teams[request.param]


def _cost(conn: Any, by: str | None = None, host: str | None = None) -> dict[str, Any]:
    return cost_report(conn, by=by, window=WINDOW, zone=ZONE, host=host)


def _sessions_of(conn: Any) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT id FROM sessions")}


def test_central_totals_equal_the_sum_of_the_hosts(team: dict[str, Any]) -> None:
    central = team["central"]
    ca, cb, cc = _cost(team["a"]), _cost(team["b"]), _cost(central)
    assert cc["tokens"] > 0
    for bucket in cc["totals"]:
        assert cc["totals"][bucket] == ca["totals"][bucket] + cb["totals"][bucket], bucket
    assert Decimal(cc["cost_usd"]) == Decimal(ca["cost_usd"]) + Decimal(cb["cost_usd"])
    assert cc["billed_messages"] == ca["billed_messages"] + cb["billed_messages"]
    # and equal to one machine that read both trees (the same dedup rules)
    assert _cost(team["union"])["totals"] == cc["totals"]
    # per host: cost --by host and --host give each machine exactly its local totals
    by_host = {r["host_id"]: r for r in _cost(central, "host")["rows"]}
    assert by_host["host-a"]["totals"] == ca["totals"]
    assert by_host["host-b"]["totals"] == cb["totals"]
    assert _cost(central, host="host-b")["totals"] == cb["totals"]
    # a local database is one host: its own host id, and nothing for another
    assert [r["host_id"] for r in _cost(team["a"], "host")["rows"]] == ["host-a"]
    assert _cost(team["a"], host="host-a")["totals"] == ca["totals"]
    # an unknown host is refused, naming the known ones: a local database knows only its own
    with pytest.raises(InputError, match="no host 'host-b' in this database; known: host-a"):
        _cost(team["a"], host="host-b")
    with pytest.raises(InputError, match="no host 'typo' in the central store; known: host-a, host-b"):
        _cost(central, host="typo")


def test_central_per_session_totals_equal_the_sum_of_the_hosts(team: dict[str, Any]) -> None:
    per: dict[str, Counter[str]] = {}
    for conn in (team["a"], team["b"]):
        for r in _cost(conn, "session")["rows"]:
            per.setdefault(r["session_id"], Counter()).update(r["totals"])
    central = {r["session_id"]: Counter(r["totals"]) for r in _cost(team["central"], "session")["rows"]}
    assert central == per
    assert team["shared"] in central


def test_trees_and_sessions_equal(team: dict[str, Any]) -> None:
    central = team["central"]
    a_only = _sessions_of(team["a"]) - _sessions_of(team["b"])
    b_only = _sessions_of(team["b"]) - _sessions_of(team["a"])
    both = _sessions_of(team["a"]) & _sessions_of(team["b"])
    assert team["shared"] in both
    assert _sessions_of(central) == a_only | b_only | both
    for sids, local in ((a_only, team["a"]), (b_only, team["b"])):
        for sid in sorted(sids):
            assert tree_report(central, sid) == tree_report(local, sid), sid
    # a session on both machines: the tree one machine holding both parts would show
    for sid in sorted(both):
        assert tree_report(central, sid) == tree_report(team["union"], sid), sid
    assert sessions_report(central, window=WINDOW) == sessions_report(team["union"], window=WINDOW)


def test_reship_adds_nothing_and_reproject_changes_nothing(team: dict[str, Any]) -> None:
    from ingestd.central.check import digests

    url = team["url"]
    before = {h: central_log(url, h) for h in ("host-a", "host-b")}
    with pg_connect(url) as pg:
        d0 = digests(pg)
    again = ship_all(team["a"], url)
    assert (again.sent, again.inserted) == (0, 0)
    project(url)
    assert {h: central_log(url, h) for h in ("host-a", "host-b")} == before
    assert before["host-a"] == local_log(team["a"])
    with pg_connect(url) as pg:
        assert digests(pg) == d0


def test_store_commands_read_the_central_store(team: dict[str, Any]) -> None:
    url = team["url"]
    runner = CliRunner()
    for args in (
        ["replay", "--store", url],
        ["verify", "--store", url],
        ["status", "--store", url, "--json"],
        ["status", "--store", url],
        ["cost", "--store", url, "--by", "host", "--json"],
        ["sessions", "--store", url, "--json"],
        ["tree", "--store", url, team["shared"][:8], "--json"],
    ):
        res = runner.invoke(cli, args, catch_exceptions=False)
        assert res.exit_code == 0, (args, res.output)
    res = runner.invoke(cli, ["cost", "--store", url, "--by", "host", "--json"])
    import orjson

    doc = orjson.loads(res.stdout)
    assert sorted(r["host_id"] for r in doc["rows"]) == ["host-a", "host-b"]
    res = runner.invoke(cli, ["status", "--store", url, "--json"])
    st = orjson.loads(res.stdout)
    assert [h["host_id"] for h in st["hosts"]] == ["host-a", "host-b"]
    assert st["projector"]["rows_behind"] == 0
    assert st["rows"]["events_raw"] == sum(h["rows_shipped"] for h in st["hosts"])
    res = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["status", "--store", url])
    assert "host-a" in res.output and "0 rows behind" in res.output


def test_a_message_two_hosts_hold_counts_once_under_the_better_evidence(tmp_path: Path, pg_url: str) -> None:
    """A shared session whose subagent files are on one host while the other has the parent's first
    lines, with ``agent_progress`` copies of the subagents' calls: one message, two hosts' evidence.
    The central store counts it once, like one machine holding both (SPEC §4.4), under the host
    with the direct record."""
    t = build_team(SOURCES["corpus"], tmp_path, pg_url, subagents=True)
    try:
        q = f"SELECT message_id, bucket, tokens, claim_rank FROM {BY_BUCKET}"
        a = {(r[0], r[1]): (r[2], r[3]) for r in t["a"].execute(q)}
        b = {(r[0], r[1]): (r[2], r[3]) for r in t["b"].execute(q)}
        overlap = set(a) & set(b)
        assert overlap, "the corpus's shared session should put one message on both hosts"
        dropped: Counter[str] = Counter()
        owners: dict[tuple[str, str], str] = {}
        for key in overlap:
            (ta, ra), (tb, rb) = a[key], b[key]
            loser = "host-a" if (ra, "host-b") < (rb, "host-a") else "host-b"
            owners[key] = "host-b" if loser == "host-a" else "host-a"
            dropped[loser + ":" + key[1]] += ta if loser == "host-a" else tb
        ca, cb, cc = _cost(t["a"]), _cost(t["b"]), _cost(t["central"])
        assert cc["totals"] == _cost(t["union"])["totals"]
        for bucket in cc["totals"]:
            lost = dropped["host-a:" + bucket] + dropped["host-b:" + bucket]
            assert cc["totals"][bucket] == ca["totals"][bucket] + cb["totals"][bucket] - lost, bucket
        by_host = {r["host_id"]: r["totals"] for r in _cost(t["central"], "host")["rows"]}
        for h, local in (("host-a", ca), ("host-b", cb)):
            assert by_host[h] == {k: local["totals"][k] - dropped[f"{h}:{k}"] for k in local["totals"]}
        stored = {
            (r[0], r[1]): r[2]
            for r in t["central"].execute(f"SELECT message_id, bucket, host_id FROM {BY_BUCKET}")
            if (r[0], r[1]) in overlap
        }
        assert stored == owners
        assert tree_report(t["central"], t["shared"]) == tree_report(t["union"], t["shared"])
    finally:
        t["central"].close()


def test_projectors_on_two_machines_at_once_give_the_one_machine_answer(team: dict[str, Any], pg_url: str) -> None:
    """Two ``project --store`` runs at once, in small slices, while nothing was folded yet: the
    advisory lock serialises their slices, so the projections equal one run's (the team's store:
    the same hosts' logs, shipped in the same order, folded by one ``project``)."""
    import threading

    from ingestd.central.check import digests, replay
    from ingestd.central.project import project_store

    ship_all(team["a"], pg_url)
    ship_all(team["b"], pg_url)
    with pg_connect(pg_url) as pg:
        (rows,) = pg.execute("SELECT count(*) FROM events_raw").fetchone() or (0,)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with pg_connect(pg_url) as pg:
                project_store(pg, batch_rows=max(20, int(rows) // 8))  # about 8 slices each
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with pg_connect(pg_url) as pg, pg_connect(team["url"]) as one_run:
        assert digests(pg) == digests(one_run)
        if team["source"] == "fixtures":  # replay names a tampered table: any source shows it, the small one fast
            assert replay(pg).ok
            with pg.transaction():  # a live row the log does not give: replay names its table
                pg.execute("UPDATE sessions SET title = 'tampered' WHERE id = (SELECT min(id) FROM sessions)")
            assert replay(pg).differing == ["sessions"]


def test_titles_equal(team: dict[str, Any]) -> None:
    # a summary record's title joins the session of its leaf record (ingestd.store.titles),
    # centrally as on one machine holding both trees
    q = "SELECT id, title, title_source FROM sessions"
    central = {r[0]: (r[1], r[2]) for r in team["central"].execute(q)}
    assert central == {r[0]: (r[1], r[2]) for r in team["union"].execute(q)}
    q = "SELECT file_session, leaf_session, summary FROM summaries ORDER BY 1, 2, 3"
    assert team["central"].execute(q) == team["union"].execute(q).fetchall()


def test_reproject_in_small_slices_gives_the_same_rows(team: dict[str, Any]) -> None:
    """A summary and its leaf record in different slices, sessions folded in the other order."""
    from ingestd.central.check import digests
    from ingestd.central.project import project_store

    url = team["url"]
    with pg_connect(url) as pg:
        d0 = digests(pg)
        pg.execute("UPDATE projector_progress SET projection_revision = 'older rules'")
        n = pg.execute("SELECT count(*) FROM events_raw").fetchone()
    assert n is not None
    with pg_connect(url) as pg:
        got = project_store(pg, batch_rows=max(7, int(n[0]) // 9), reverse=True)
        assert got.reprojected and got.slices > 1
        assert digests(pg) == d0
