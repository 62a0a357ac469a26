"""``ingestd ship --set-host-id NAME``: the supported way to give a database its own host id when
two machines share a host name (team mode), edges re-stamped so ``replay`` still agrees.

Regression: ``ship`` said "give this one its own host id (meta.host_id)" but no
command did, and editing ``meta.host_id`` with sqlite made ``ingestd replay`` fail "replay mismatch
in orchestration_edges".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.daemon import identitylock, lock
from ingestd.errors import DaemonError
from ingestd.store.connection import connect
from tests.report.test_deep_tree import make_chain


@pytest.fixture
def db(tmp_path: Path) -> Path:
    projects = make_chain(tmp_path / "projects", 5)
    path = tmp_path / "x.db"
    r = CliRunner().invoke(cli, ["ingest", "--projects", str(projects), "--db", str(path)])
    assert r.exit_code == 0, r.output
    return path


def hosts(db: Path) -> tuple[list[tuple[str, int]], str]:
    conn = connect(db, readonly=True)
    edges = [(str(h), int(n)) for h, n in conn.execute("SELECT host_id, count(*) FROM orchestration_edges GROUP BY 1")]
    (meta,) = conn.execute("SELECT value FROM meta WHERE key = 'host_id'").fetchall()
    return edges, str(meta[0])


def test_set_host_id_restamps_the_edges_and_replay_agrees(db: Path) -> None:
    r = CliRunner().invoke(cli, ["ship", "--set-host-id", "box-2", "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert "nothing was shipped: run `ingestd ship` to ship under the new id" in r.output, r.output
    assert "-> 'box-2'; 5 edges re-stamped" in r.output
    assert hosts(db) == ([("box-2", 5)], "box-2")
    rep = CliRunner().invoke(cli, ["replay", "--db", str(db), "--json"])
    assert rep.exit_code == 0, rep.output
    again = CliRunner().invoke(cli, ["ship", "--set-host-id", "box-2", "--db", str(db)])
    assert again.exit_code == 0 and "already 'box-2': nothing was changed" in again.output


def test_editing_meta_alone_is_what_broke_replay(db: Path) -> None:
    # why the command re-stamps the edges: the edit the advice led to
    conn = connect(db)
    conn.execute("UPDATE meta SET value = 'box-2' WHERE key = 'host_id'")
    conn.close()
    rep = CliRunner().invoke(cli, ["replay", "--db", str(db), "--json"])
    assert rep.exit_code == 1 and "orchestration_edges" in rep.output


@pytest.mark.parametrize("name", ["", " box", "box\n", "x" * 201])
def test_a_bad_host_id_is_refused(db: Path, name: str) -> None:
    r = CliRunner().invoke(cli, ["ship", "--set-host-id", name, "--db", str(db)])
    assert r.exit_code == 2 and "printable characters" in r.output
    assert hosts(db)[1] != name


def files(db: Path) -> dict[str, bytes]:
    """The database and what SQLite keeps beside it, byte for byte."""
    return {p.name: p.read_bytes() for p in sorted(db.parent.glob(db.name + "*")) if not p.name.endswith(".lock")}


def test_refused_while_a_daemon_serves_the_database(db: Path) -> None:
    # review: the database was opened (migrated, re-projected) before the lock refused: it wrote, then
    # said no. An older projection revision shows it: opening re-projects and stamps the current one.
    conn = connect(db)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'projection_revision'")
    conn.close()
    before = files(db)
    held = lock.acquire(db)
    try:
        r = CliRunner().invoke(cli, ["ship", "--set-host-id", "box-2", "--db", str(db)])
    finally:
        held.release()
    assert r.exit_code == 2, r.output
    assert "already running" in r.output
    assert files(db) == before
    conn = connect(db, readonly=True)
    assert conn.execute("SELECT value FROM meta WHERE key = 'projection_revision'").fetchall() == [("0",)]
    conn.close()
    assert hosts(db)[1] != "box-2"


def test_a_missing_database_is_refused_and_not_created(tmp_path: Path) -> None:
    db = tmp_path / "none" / "x.db"
    r = CliRunner().invoke(cli, ["ship", "--set-host-id", "box-2", "--db", str(db)])
    assert r.exit_code == 2 and f"no database at {db}" in r.output
    assert not db.parent.exists()


def test_refused_once_rows_were_shipped(db: Path) -> None:
    conn = connect(db)
    conn.execute("INSERT INTO meta (key, value) VALUES ('shipped_through', '3')")
    conn.close()
    r = CliRunner().invoke(cli, ["ship", "--set-host-id", "box-2", "--db", str(db)])
    assert r.exit_code == 2 and "has shipped its log through local id 3" in r.output
    assert hosts(db)[1] != "box-2"


def test_refused_while_an_ingest_writes_with_the_current_id(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: an `ingest` running at that moment (it takes no daemon lock: it may run beside the daemon)
    # read the old id at its start and went on stamping its new edges with it
    import ingestd.commands.ingest as ingest_cmd

    answers = []
    real = ingest_cmd.ingest_roots

    def ingest_roots(*args: Any, **kwargs: Any) -> Any:
        # in the middle of the run, with the identity already read
        answers.append(CliRunner().invoke(cli, ["ship", "--set-host-id", "box-2", "--db", str(db)]))
        return real(*args, **kwargs)

    monkeypatch.setattr(ingest_cmd, "ingest_roots", ingest_roots)
    more = make_chain(tmp_path / "more", 3)
    r = CliRunner().invoke(cli, ["ingest", "--projects", str(more), "--db", str(db)])
    assert r.exit_code == 0, r.output
    [refused] = answers
    assert refused.exit_code == 2, refused.output
    assert "an `ingestd ingest` is writing to" in refused.output
    edges, meta = hosts(db)
    assert meta != "box-2" and [h for h, _ in edges] == [meta]
    # once it has finished, the change goes through
    done = CliRunner().invoke(cli, ["ship", "--set-host-id", "box-2", "--db", str(db)])
    assert done.exit_code == 0, done.output


def test_two_ingests_share_the_lock(db: Path) -> None:
    with identitylock.shared(db), identitylock.shared(db), pytest.raises(DaemonError, match="ingest"):
        identitylock.exclusive(db).__enter__()
    with identitylock.exclusive(db):
        pass
