"""``ingestd sessions``: a screenful on the terminal, everything with ``--json``."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli

N = 25


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("projects")
    proj = root / "-w-p"
    proj.mkdir()
    for i in range(N):
        sid = f"{i:08d}-0000-4000-8000-000000000000"
        rec = {
            "type": "user",
            "uuid": f"u{i}",
            "parentUuid": None,
            "sessionId": sid,
            "cwd": "/w/p",
            "timestamp": f"2026-01-{i + 1:02d}T10:00:00.000Z",
            "message": {"role": "user", "content": "hi"},
        }
        (proj / f"{sid}.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    path = tmp_path_factory.mktemp("db") / "s.db"
    r = CliRunner().invoke(cli, ["ingest", "--db", str(path), "--projects", str(root)])
    assert r.exit_code == 0, r.output
    return path


def run(db: Path, *args: str) -> str:
    r = CliRunner().invoke(cli, ["sessions", "--db", str(db), *args], env={"COLUMNS": "120", "LINES": "40"})
    assert r.exit_code == 0, r.output
    return r.stdout


def test_the_terminal_shows_the_newest_twenty(db: Path) -> None:
    out = run(db)
    assert f"newest 20 of {N} sessions" in out and "--all shows all" in out
    assert "00000024" in out and "00000005" in out and "00000004" not in out


def test_a_short_terminal_keeps_the_header_on_screen(db: Path) -> None:
    r = CliRunner().invoke(cli, ["sessions", "--db", str(db)], env={"COLUMNS": "80", "LINES": "24"})
    lines = r.stdout.splitlines()
    assert len(lines) <= 23 and lines[0].startswith(f"newest 19 of {N} sessions"), lines
    assert lines[1].split()[:2] == ["project", "session"]


def test_all_shows_every_session(db: Path) -> None:
    out = run(db, "--all")
    assert f"{N} sessions" in out and "newest" not in out and "00000000" in out


def test_json_is_complete_unless_limited(db: Path) -> None:
    doc = orjson.loads(run(db, "--json"))
    assert doc["count"] == doc["matched"] == N and len(doc["rows"]) == N
    doc = orjson.loads(run(db, "--json", "--limit", "3"))
    assert doc["count"] == 3 and doc["matched"] == N
    assert [r["session_id"][:8] for r in doc["rows"]] == ["00000024", "00000023", "00000022"]
