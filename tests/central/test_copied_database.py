"""One database copied to two machines ("bring my history to the new laptop"): both copies keep the
instance and host id. Was: the store took both, each ship logged ``ship_log_diverged`` and re-sent
the whole log, and both showed as one host. Now the copy the store had left behind is refused by
name with the fix, ``status --store`` warns, ``ship --set-host-id`` gives that copy its own identity,
and nothing is lost: each copy's rows end up in the store."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ingestd.central.copies import SecondCopy
from ingestd.cli import cli
from ingestd.store.identity import database_identity, shipped_through
from tests.central.support import central_log, local_db, local_log, ship_all
from tests.conftest import REPO
from tests.reliability.daemon import record


def _session(root: Path, sid: str, n: int) -> None:
    d = root / "-home-u-new"
    d.mkdir(exist_ok=True)
    (d / f"{sid}.jsonl").write_bytes(b"".join(record(sid, i, assistant=True) for i in range(n)))


def test_a_copied_database_is_refused_by_name_warned_and_fixed_with_nothing_lost(tmp_path: Path, pg_url: str) -> None:
    root_a, root_b = tmp_path / "ra", tmp_path / "rb"
    shutil.copytree(REPO / "fixtures" / "projects", root_a)
    local = local_db(tmp_path / "a.db", [root_a], "laptop")
    ship_all(local, pg_url)
    local.close()
    shutil.copy(tmp_path / "a.db", tmp_path / "b.db")  # the copy to the new laptop
    shutil.copytree(root_a, root_b)
    _session(root_a, "55555555-5555-4555-8555-555555555555", 6)
    a = local_db(tmp_path / "a.db", [root_a], "laptop")
    ship_all(a, pg_url)
    _session(root_b, "66666666-6666-4666-8666-666666666666", 9)
    b = local_db(tmp_path / "b.db", [root_b], "laptop")
    assert database_identity(a) == database_identity(b)
    ship_all(b, pg_url)  # what a restored backup does too: taken, once
    with pytest.raises(SecondCopy, match=r"ship --set-host-id NAME") as refused:
        ship_all(a, pg_url)  # the copy the store left behind ships again: refused
    assert "laptop" in str(refused.value) and "copied" in str(refused.value)
    assert ship_all(b, pg_url).sent == 0  # the other copy ships on, without re-sending
    with pytest.raises(SecondCopy):
        ship_all(a, pg_url)  # and stays refused until fixed

    runner = CliRunner()
    st = orjson.loads(runner.invoke(cli, ["status", "--store", pg_url, "--json"]).stdout)
    [host] = st["hosts"]
    assert host["refused_at"] is not None and "--set-host-id" in host["warning"]
    text = runner.invoke(cli, ["status", "--store", pg_url], env={"COLUMNS": "200"}).output
    assert "warning: host laptop" in text and "--set-host-id" in " ".join(text.split())

    before = database_identity(a)
    a.close()
    res = runner.invoke(cli, ["ship", "--db", str(tmp_path / "a.db"), "--set-host-id", "laptop-old"])
    assert res.exit_code == 0, res.output
    a = local_db(tmp_path / "a.db", [root_a], "laptop")
    after = database_identity(a)
    assert after.host_id == "laptop-old" and after.instance != before.instance
    assert shipped_through(a) == 0  # nothing shipped under the new id yet
    assert a.execute("SELECT DISTINCT instance, host_id FROM orchestration_edges").fetchall() == [
        (after.instance, "laptop-old")
    ]
    ship_all(a, pg_url)
    assert {r[1] for r in local_log(a)} == {r[1] for r in central_log(pg_url, "laptop-old")}
    assert {r[1] for r in local_log(b)} <= {r[1] for r in central_log(pg_url, "laptop")}
    assert runner.invoke(cli, ["replay", "--db", str(tmp_path / "a.db")]).exit_code == 0
    a.close()
    b.close()
