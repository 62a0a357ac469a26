"""A ``<task-notification>`` whose task id names no agent is kept and counted: ``status`` (JSON and
text) and ``doctor`` show how many, none is made an agent."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from click.testing import CliRunner

from ingestd.claude import doctor
from ingestd.cli import cli
from ingestd.core.projector import fold_log
from ingestd.core.touch import Ctx
from ingestd.store.connection import connect, write_txn
from ingestd.store.migrate import migrate
from ingestd.store.upsert import write_changes
from tests.core import async_support as a


def _db(tmp_path: Path, *, stray: bool) -> Path:
    rows = a.session()
    if stray:
        queued = copy.deepcopy(a.records()[1])
        queued["content"] = str(queued["content"]).replace(a.CHILD, "b0000000000000000")
        rows.append(a.line(100, queued))
    db = tmp_path / "n.db"
    conn = connect(db)
    migrate(conn)
    ch = fold_log(a.SID, rows, Ctx())[1]
    write_txn(conn, lambda c: write_changes(c, ch))
    conn.close()
    return db


def _status(db: Path, *args: str) -> str:
    r = CliRunner().invoke(cli, ["status", "--db", str(db), *args], env={"COLUMNS": "200"}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def test_status_and_doctor_count_a_notice_naming_no_agent(tmp_path: Path) -> None:
    db = _db(tmp_path, stray=True)
    assert json.loads(_status(db, "--json"))["notices"] == {"unmatched": 1, "sessions": 1}
    assert "1 task-notification in 1 session name no agent" in _status(db)
    conn = connect(db, readonly=True)
    try:
        f = doctor.notices_finding(conn)
        assert conn.execute("SELECT count(*) FROM agents WHERE id = 'b0000000000000000'").fetchall() == [(0,)]
    finally:
        conn.close()
    assert f is not None and f.level == doctor.NOTE and "1 task-notification" in f.message


def test_when_every_notice_names_an_agent_status_says_so(tmp_path: Path) -> None:
    db = _db(tmp_path, stray=False)
    assert json.loads(_status(db, "--json"))["notices"] == {"unmatched": 0, "sessions": 0}
    assert "notices" not in _status(db)  # no row: the screen keeps the answer
    conn = connect(db, readonly=True)
    try:
        f = doctor.notices_finding(conn)
    finally:
        conn.close()
    assert f is not None and f.level == doctor.OK
    assert doctor.notices_finding(None) is None
