"""A fork is a session of its own whose parent is found from evidence (``report.forks``): a
``forkedFrom.sessionId`` on its records, its root being a compaction boundary of another session,
or a SessionStart ``source: "fork"`` with a root shared with a session no such hook marks. Shown by
``tree`` (terminal, JSON, the read API's document), in any order of ingestion.

From a real Claude Code 2.1.332 run (``fixtures/claude-2.1.332/fork``: a session, ``--continue``
with ``/compact``, then ``--resume ID --fork-session``; the fork's SessionStart body as sent).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import apsw
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core import hookkeys
from ingestd.core.decode import value_marks
from ingestd.core.projector import fold_log
from ingestd.core.touch import Ctx
from ingestd.daemon.hookwriter import make_apply
from ingestd.http.hooks import hook_row as http_hook_row
from ingestd.projection.rebuild import rebuild_projections
from ingestd.report.forks import fork_children, fork_parent
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.core.projector_support import Model, by_session, hook_row, tree_rows
from tests.support import statements

FORK_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "claude-2.1.332" / "fork"
PARENT = "5bef1beb-81ea-4964-9285-56bf5cae4858"
FORK = "df57242f-6ae9-451c-862f-c9a1325efb71"
BOUNDARY = "bfa86176-db7c-40b4-9b77-88a597c67a22"


def _run(*args: str) -> str:
    r = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def _tree(db: Path, sid: str) -> dict[str, Any]:
    return dict(json.loads(_run("tree", sid, "--db", str(db), "--json")))


def _projects(tmp_path: Path, files: list[str], edit: Any = None) -> Path:
    root = tmp_path / "projects" / "-home-user-proj"
    root.mkdir(parents=True)
    for name in files:
        text = (FORK_DIR / "-home-user-proj" / name).read_text()
        (root / name).write_text(edit(text) if edit else text)
    return tmp_path / "projects"


def _edges(db: Path) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return sorted(conn.execute("SELECT * FROM orchestration_edges"))
    finally:
        conn.close()


def test_a_fork_after_a_compaction_names_its_parent_in_either_order(tmp_path: Path) -> None:
    edges = []
    for order in ([f"{PARENT}.jsonl", f"{FORK}.jsonl"], [f"{FORK}.jsonl", f"{PARENT}.jsonl"]):
        base = tmp_path / order[0][:8]
        db = base / "f.db"
        projects = _projects(base, [])
        for name in order:  # one file per ingest: the second joins the first
            shutil.copy(FORK_DIR / "-home-user-proj" / name, projects / "-home-user-proj" / name)
            _run("ingest", "--db", str(db), "--projects", str(projects))
        fork = _tree(db, FORK)
        assert fork["forked_from"] == {"session_id": PARENT, "evidence": "compaction_root", "root_uuid": BOUNDARY}
        assert fork["forks"] == []
        parent = _tree(db, PARENT)
        assert parent["forked_from"] is None
        assert parent["forks"] == [{"session_id": FORK, "evidence": "compaction_root"}]
        text = _run("tree", FORK[:8], "--db", str(db))
        assert f"forked from session {PARENT} (via fork: compaction root)" in text
        assert f"forked into session {FORK}" in _run("tree", PARENT[:8], "--db", str(db))
        # the fork is an edge of the fork's session, parent main agent -> the fork's main agent
        assert fork["tree"]["agent_id"] == FORK and fork["tree"]["edge"] == {
            "parent_agent_id": PARENT,
            "source": "fork",
            "created_at": fork["session"]["started_at"],
            "tool_use_id": None,
        }
        assert parent["tree"]["edge"] is None
        forks = [e for e in _edges(db) if e[4] == "fork"]
        assert [(e[1], e[2], e[3]) for e in forks] == [(FORK, PARENT, FORK)]
        edges.append([e[:5] + e[6:] for e in _edges(db)])  # each database has its own instance id
        replayed = json.loads(_run("replay", "--db", str(db), "--json"))
        assert (
            replayed["ok"]
            and dict((t["table"], t["rows"]["replay_a"]) for t in replayed["tables"])["orchestration_edges"] == 1
        )
    assert edges[0] == edges[1]


def _uncompacted_pair(tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """The fork's file and a copy of it under another session id in ``tmp_path/projects`` (the two
    start at the same root, nothing compacted); returns the copy's id and the real SessionStart
    ``fork`` body."""
    copy_id = "c0ffee00-0000-4000-8000-000000000001"
    root = tmp_path / "projects" / "-home-user-proj"
    root.mkdir(parents=True)
    text = (FORK_DIR / "-home-user-proj" / f"{FORK}.jsonl").read_text()
    (root / f"{FORK}.jsonl").write_text(text)
    (root / f"{copy_id}.jsonl").write_text(text.replace(FORK, copy_id))
    start = next(
        json.loads(line)["body"]
        for line in (FORK_DIR / "SessionStart.jsonl").read_text().splitlines()
        if json.loads(line)["body"]["source"] == "fork"
    )
    return copy_id, dict(start)


def test_without_compaction_only_the_fork_hook_tells_the_copy_from_its_parent(tmp_path: Path) -> None:
    """Both files start at the same root when nothing was compacted: the SessionStart ``fork``
    body marks the copy; without it no parent is invented."""
    copy_id, start = _uncompacted_pair(tmp_path)
    hook = hook_row(copy_id, 10**6, "SessionStart", "2026-12-02T18:00:00.000Z", **{**start, "session_id": copy_id})
    lines = [dataclasses.replace(r, received_at="2026-12-03T00:00:00.000Z") for r in tree_rows(tmp_path / "projects")]
    for with_hook in (False, True):
        m = Model()
        for sid, rows in by_session([*lines, *([hook] if with_hook else [])]).items():
            m.apply(fold_log(sid, rows, Ctx())[1])
        if not with_hook:
            assert fork_parent(m.conn, copy_id) is None and fork_parent(m.conn, FORK) is None
            continue
        assert fork_parent(m.conn, copy_id) == {"session_id": FORK, "evidence": "fork_hook_root", "root_uuid": BOUNDARY}
        assert fork_parent(m.conn, FORK) is None
        assert fork_children(m.conn, FORK) == [{"session_id": copy_id, "evidence": "fork_hook_root"}]
        # a fork hook for the other file too: both say they are the copy, neither is the parent,
        # and the edge written for the first is taken away, not frozen
        other = dataclasses.replace(
            hook, id=10**6 + 1, session_id=FORK, payload=hook.payload.replace(copy_id.encode(), FORK.encode())
        )
        m.apply(fold_log(FORK, [*by_session(lines)[FORK], other], Ctx())[1])
        assert fork_parent(m.conn, copy_id) is None and fork_children(m.conn, FORK) == []
        assert list(m.conn.execute("SELECT count(*) FROM orchestration_edges WHERE source = 'fork'")) == [(0,)]


def test_a_branch_names_its_parent_on_its_copies(tmp_path: Path) -> None:
    """``/branch`` stamps each copied record ``forkedFrom: {sessionId, messageUuid}`` (2.1.332 bundle)."""

    def stamp(text: str) -> str:
        out = []
        for line in text.splitlines():
            rec = json.loads(line)
            if "uuid" in rec:
                rec["forkedFrom"] = {"sessionId": "b0b0b0b0-0000-4000-8000-000000000000", "messageUuid": rec["uuid"]}
            out.append(json.dumps(rec))
        return "\n".join(out) + "\n"

    db = tmp_path / "f.db"
    _run("ingest", "--db", str(db), "--projects", str(_projects(tmp_path, [f"{FORK}.jsonl"], stamp)))
    assert _tree(db, FORK)["forked_from"] == {
        "session_id": "b0b0b0b0-0000-4000-8000-000000000000",
        "evidence": "forked_from",
        "root_uuid": BOUNDARY,
    }


def _deliver(conn: Any, store: Any, body: dict[str, Any], n: int) -> list[str]:
    """Commit one hook ``body`` the way the daemon does (``make_apply``); the SQL it ran that
    touches ``orchestration_edges``."""
    raw = json.dumps(body).encode()
    event = hookkeys.parse_body(raw, value_marks(raw))
    assert not isinstance(event, hookkeys.Rejected)
    received_ns = 1_798_761_600_000_000_000 + n  # 2027, after every record of the files
    key = hookkeys.idempotency_key(event, header_key=None, received_ns=received_ns, instance="t", counter=n)
    with statements(conn, "orchestration_edges") as seen:
        store(conn, [http_hook_row(event, raw, key, received_ns)])
    return seen


def _rebuilt_edges(conn: Any, tmp_path: Path) -> list[tuple[Any, ...]]:
    """The fork edges a rebuild of ``conn``'s whole log makes (sessions in reversed order)."""
    path = tmp_path / f"rebuilt-{len(list(tmp_path.glob('rebuilt-*.db')))}.db"
    dst = connect(path)
    try:
        migrate(dst)
        rebuild_projections(conn, dst, batch_size=3, origin_order="reverse")
    finally:
        dst.close()
    return [e[1:5] for e in _edges(path)]


def test_the_daemon_moves_a_fork_edge_only_when_its_evidence_moves(tmp_path: Path) -> None:
    """Hook deliveries that leave every session's fork evidence and start as stored recompute no
    fork edge; one that moves the evidence (a SessionStart on either file) does, and a rebuild of the
    whole log gives the same edges."""
    copy_id, start = _uncompacted_pair(tmp_path)
    db = tmp_path / "d.db"
    _run("ingest", "--db", str(db), "--projects", str(tmp_path / "projects"))
    conn = connect(db)
    store = make_apply()
    tool = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}
    try:
        assert _deliver(conn, store, {**tool, "session_id": copy_id, "tool_use_id": "toolu_1"}, 1) == []
        assert _edges(db) == []
        assert _deliver(conn, store, {**start, "session_id": copy_id}, 2) != []
        assert [e[1:5] for e in _edges(db)] == [(copy_id, FORK, copy_id, "fork")]
        assert _deliver(conn, store, {**tool, "session_id": copy_id, "tool_use_id": "toolu_2"}, 3) == []
        assert _deliver(conn, store, {**tool, "session_id": FORK, "tool_use_id": "toolu_3"}, 4) == []
        assert [e[1:5] for e in _edges(db)] == [(copy_id, FORK, copy_id, "fork")] == _rebuilt_edges(conn, tmp_path)
        # the other file says it is the copy too: neither is the parent, the edge goes
        assert _deliver(conn, store, {**start, "session_id": FORK}, 5) != []
        assert _edges(db) == [] == _rebuilt_edges(conn, tmp_path)
    finally:
        conn.close()
