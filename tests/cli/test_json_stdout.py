"""stdout is for the answer (SPEC §12): every ``--json`` command prints exactly one JSON
document there, while log lines (whoever logs them, whenever) go to stderr with the logger's name."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.logs import get_logger

SID = "33333333-3333-4333-8333-333333333333"
SID2 = "44444444-4444-4444-8444-444444444444"
AGENT = "a1b2c3d"


def _rec(sid: str, kind: str, uuid: str, ts: str, **kw: object) -> bytes:
    base: dict[str, object] = {"type": kind, "sessionId": sid, "uuid": uuid, "timestamp": ts, **kw}
    if kind == "user":
        base.setdefault("message", {"role": "user", "content": "go"})
    return orjson.dumps(base) + b"\n"


def _tree(root: Path) -> None:
    """Two sessions whose subagent files share a short agent id (the issue's fourth input; since
    agents are keyed per session it is no collision), each with a billed message."""
    for n, sid in enumerate((SID, SID2)):
        d = root / "-p"
        (d / sid / "subagents").mkdir(parents=True, exist_ok=True)
        msg = {
            "id": f"msg_{n}",
            "model": "claude-opus-4-6",
            "role": "assistant",
            "content": [],
            "usage": {"output_tokens": 3},
        }
        (d / f"{sid}.jsonl").write_bytes(
            _rec(sid, "user", f"u{n}", f"2026-01-0{n + 1}T00:00:00.000Z")
            + _rec(sid, "assistant", f"a{n}", f"2026-01-0{n + 1}T00:00:01.000Z", message=msg)
        )
        (d / sid / "subagents" / f"agent-{AGENT}.jsonl").write_bytes(
            _rec(sid, "user", f"s{n}", f"2026-01-0{n + 1}T00:00:02.000Z", agentId=AGENT, isSidechain=True)
        )


@pytest.fixture
def loaded(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "projects"
    _tree(root)
    db = tmp_path / "j.db"
    res = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(root), "--json"])
    assert res.exit_code == 0, res.output
    return db, root


@pytest.fixture
def warning_storm() -> Iterator[None]:
    """A thread logging a warning every millisecond for as long as the command runs."""
    stop = threading.Event()
    log = get_logger("tests.storm")

    def storm() -> None:
        while not stop.wait(0.001):
            log.warning("storm_warning", detail="a log line that must never reach stdout")

    t = threading.Thread(target=storm, daemon=True)
    t.start()
    yield
    stop.set()
    t.join()


def _commands(db: Path, root: Path, tmp: Path) -> list[list[str]]:
    prices = tmp / "prices.json"
    prices.write_bytes(
        orjson.dumps(
            [
                {
                    "model": "claude-test-1",
                    "effective_from": "2026-01-01",
                    "rates": {
                        "input": 1,
                        "output": 2,
                        "cache_read": 0.1,
                        "cache_write_5m": 1.25,
                        "cache_write_1h": 2,
                    },
                }
            ]
        )
    )
    d = ["--db", str(db)]
    return [
        ["ingest", *d, "--projects", str(root)],
        ["replay", *d, "--workdir", str(tmp)],
        ["verify", *d],
        ["prune", *d, "--dry-run"],
        ["backup", *d, "--dir", str(tmp / "backups")],
        ["migrate", *d, "--status"],
        ["pricing", "list", *d],
        [
            "pricing",
            "set",
            "claude-test-2",
            *d,
            "--effective-from",
            "2026-01-01",
            "--input",
            "1",
            "--output",
            "2",
            "--cache-read",
            "0.1",
            "--cache-write-5m",
            "1.25",
            "--cache-write-1h",
            "2",
        ],
        ["pricing", "load", str(prices), *d],
        ["sessions", *d],
        ["tree", SID, *d],
        ["cost", *d, "--by", "model"],
        ["status", *d, "--no-stat"],
    ]


def test_every_json_command_prints_one_document_while_warnings_are_logged(
    loaded: tuple[Path, Path], tmp_path: Path, warning_storm: None
) -> None:
    db, root = loaded
    for args in _commands(db, root, tmp_path):
        res = CliRunner().invoke(cli, [*args, "--json"])
        assert res.exit_code == 0, (args, res.output, res.exception)  # every command succeeds here
        orjson.loads(res.stdout)  # exactly one JSON document: anything else on stdout fails here
        assert "storm_warning" not in res.stdout, args
    # and the warnings did go somewhere: stderr, with the logger's name. A command can end before
    # the storm thread gets the GIL back (5 ms switch interval on a loaded machine): try a few.
    for _ in range(50):
        res = CliRunner().invoke(cli, ["status", "--db", str(db), "--no-stat", "--json"])
        lines = [orjson.loads(x) for x in res.stderr.splitlines() if x.startswith("{")]
        if any(x["event"] == "storm_warning" and x["logger"] == "tests.storm" for x in lines):
            break
    else:
        raise AssertionError("no storm_warning reached stderr in 50 commands")


def test_ingest_json_in_a_real_process_prints_only_json_while_it_warns(tmp_path: Path) -> None:
    # the fourth small input, in a real process, plus a line past max_line_bytes so that
    # ingest itself warns (``line_oversized``): the warning goes to stderr, stdout is one document
    root = tmp_path / "projects"
    _tree(root)
    with (root / "-p" / f"{SID}.jsonl").open("ab") as f:
        f.write(
            _rec(SID, "user", "long", "2026-01-01T00:00:03.000Z", message={"role": "user", "content": "x" * 20_000})
        )
    env = {**os.environ, "INGESTD_CONFIG": os.environ["INGESTD_CONFIG"], "INGESTD_MAX_LINE_BYTES": "8192"}
    out = subprocess.run(
        [sys.executable, "-m", "ingestd", "ingest", "--db", str(tmp_path / "c.db"), "--projects", str(root), "--json"],
        capture_output=True,
        env=env,
        check=True,
        timeout=120,
    )
    doc = orjson.loads(out.stdout)
    assert doc["messages"] == 2
    logged = [orjson.loads(x) for x in out.stderr.splitlines() if x.startswith(b"{")]
    warned = [x for x in logged if x["event"] == "line_oversized"]
    assert warned and warned[0]["logger"] == "ingestd.ingest"
    assert not [x for x in logged if x["event"] == "agent_id_collision"], "agents are per session"
