"""``ingestd export``: transcripts back from the log, byte for byte, in Claude Code's layout; the real
corpus round trip (ingest, delete the source, export, compare every file, ingest the export again)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd.cli import cli

SID = "4d5611aa-0000-4000-8000-000000000001"
OTHER = "77aa0000-0000-4000-8000-000000000002"


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def ingest(db: Path, root: Path) -> None:
    r = run("ingest", "--db", str(db), "--projects", str(root))
    assert r.exit_code == 0, r.output


def tree_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def round_trip(source: Path, tmp_path: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Ingest ``source`` into ``tmp_path/i.db``, delete it, export the log to ``tmp_path/out``: the
    export's JSON document and the files written."""
    db = tmp_path / "i.db"
    ingest(db, source)
    shutil.rmtree(source)
    out = tmp_path / "out"
    r = run("export", "--db", str(db), "--to", str(out), "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output), tree_files(out)


def record(sid: str, i: int, **extra: Any) -> bytes:
    rec = {"type": "user", "sessionId": sid, "uuid": f"u{i}", "timestamp": f"2026-11-20T10:00:0{i}.000Z", **extra}
    return json.dumps(rec).encode()


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A projects tree as Claude Code lays one out: a main transcript, a subagent's with its
    .meta.json, a CRLF file with empty lines, an invalid line, and another project's session."""
    root = tmp_path / "projects"
    proj = root / "-home-user-proj"
    sub = proj / SID / "subagents"
    sub.mkdir(parents=True)
    (proj / f"{SID}.jsonl").write_bytes(
        record(SID, 1, cwd="/home/user/proj") + b"\nnot json\n" + record(SID, 2) + b"\n"
    )
    (sub / "agent-a1b2c3d.jsonl").write_bytes(record(SID, 3, agentId="a1b2c3d", isSidechain=True) + b"\n")
    (sub / "agent-a1b2c3d.meta.json").write_bytes(b'{"agentType": "general-purpose", "finished": true}')
    other = root / "-home-user-other"
    other.mkdir()
    crlf = record(OTHER, 1, cwd="/home/user/other") + b"\r\n\r\n" + record(OTHER, 2) + b"\r\n"
    (other / f"{OTHER}.jsonl").write_bytes(crlf)
    return root


def test_every_file_comes_back_byte_for_byte_after_the_source_is_gone(source: Path, tmp_path: Path) -> None:
    want = tree_files(source)
    doc, got = round_trip(source, tmp_path)
    assert (doc["files"], doc["written"], doc["blank_lines"], doc["skipped"]) == (4, 4, 1, [])
    assert got == want
    assert {p.stat().st_mode & 0o777 for p in (tmp_path / "out").rglob("*") if p.is_file()} == {0o600}


def test_a_last_line_read_without_its_newline_comes_back_without_one(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    proj = root / "-home-user-proj"
    proj.mkdir(parents=True)
    f = proj / f"{SID}.jsonl"
    f.write_bytes(record(SID, 1, cwd="/home/user/proj") + b"\n" + record(SID, 2))  # a copy cut short
    os.utime(f, (time.time() - 3600, time.time() - 3600))  # idle: its last line is read
    want = tree_files(root)
    assert round_trip(root, tmp_path)[1] == want


def test_one_session_by_prefix_is_its_own_files_with_its_subagents(source: Path, tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    ingest(db, source)
    out = tmp_path / "out"
    assert run("export", "--db", str(db), "--to", str(out), SID[:6]).exit_code == 0
    assert set(tree_files(out)) == {
        f"-home-user-proj/{SID}.jsonl",
        f"-home-user-proj/{SID}/subagents/agent-a1b2c3d.jsonl",
        f"-home-user-proj/{SID}/subagents/agent-a1b2c3d.meta.json",
    }


def test_project_and_since_select_sessions(source: Path, tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    ingest(db, source)
    out = tmp_path / "by-project"
    assert run("export", "--db", str(db), "--to", str(out), "--project", "user/other").exit_code == 0
    assert set(tree_files(out)) == {f"-home-user-other/{OTHER}.jsonl"}
    late = tmp_path / "late"
    r = run("export", "--db", str(db), "--to", str(late), "--since", "2026-12-01", "--json")
    assert json.loads(r.output)["files"] == 0


def test_a_different_existing_file_stops_the_export_before_anything_is_written(source: Path, tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    ingest(db, source)
    out = tmp_path / "out"
    clash = out / "-home-user-proj" / f"{SID}.jsonl"
    clash.parent.mkdir(parents=True)
    clash.write_bytes(b"mine\n")
    r = CliRunner().invoke(cli, ["export", "--db", str(db), "--to", str(out)])
    assert r.exit_code == 2
    assert f"{clash} exists with other content" in r.output
    assert tree_files(out) == {f"-home-user-proj/{SID}.jsonl": b"mine\n"}


@pytest.mark.parametrize("deep", [False, True])
def test_a_symlinked_or_file_folder_in_the_tree_stops_the_export_before_anything_is_written(
    source: Path, tmp_path: Path, deep: bool
) -> None:
    """A folder of the tree that is a symlink would take the files out of it (to wherever it
    points); one that is a file could never hold them."""
    db = tmp_path / "i.db"
    ingest(db, source)
    out = tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proj = out / "-home-user-proj"
    link = proj / SID if deep else proj
    link.parent.mkdir(parents=True)
    link.symlink_to(elsewhere, target_is_directory=True)
    r = CliRunner().invoke(cli, ["export", "--db", str(db), "--to", str(out)])
    assert r.exit_code == 2, r.output
    assert f"{link} is a symlink" in r.output and "nothing was written" in r.output
    assert list(elsewhere.iterdir()) == [] and tree_files(out) == {}
    link.unlink()
    link.write_bytes(b"")
    r = CliRunner().invoke(cli, ["export", "--db", str(db), "--to", str(out)])
    assert r.exit_code == 2 and f"{link} is not a folder" in r.output, r.output
    assert tree_files(out) == {str(link.relative_to(out)): b""}


def test_a_file_made_during_the_export_is_never_overwritten(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingestd.retention import export as export_mod

    db = tmp_path / "i.db"
    ingest(db, source)
    out = tmp_path / "out"
    planned = export_mod.plan

    def plan_then_race(rebuilt: Any, dest: Path) -> Any:
        got = planned(rebuilt, dest)
        clash = dest / "-home-user-other" / f"{OTHER}.jsonl"
        clash.parent.mkdir(parents=True)
        clash.write_bytes(b"another program's\n")
        return got

    monkeypatch.setattr(export_mod, "plan", plan_then_race)
    r = CliRunner().invoke(cli, ["export", "--db", str(db), "--to", str(out)])
    assert r.exit_code == 2 and "was made by another program during the export" in r.output, r.output
    assert (out / "-home-user-other" / f"{OTHER}.jsonl").read_bytes() == b"another program's\n"
    assert not [p for p in out.rglob(".*tmp*")]


def test_exporting_twice_leaves_the_same_files_as_they_are(source: Path, tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    ingest(db, source)
    out = tmp_path / "out"
    assert run("export", "--db", str(db), "--to", str(out)).exit_code == 0
    doc = json.loads(run("export", "--db", str(db), "--to", str(out), "--json").output)
    assert (doc["written"], doc["unchanged"]) == (0, 4)


def test_a_file_rewritten_in_place_is_exported_as_it_is_now(source: Path, tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    ingest(db, source)
    main = source / "-home-user-proj" / f"{SID}.jsonl"
    main.write_bytes(record(SID, 5) + b"\n")
    ingest(db, source)
    out = tmp_path / "out"
    assert run("export", "--db", str(db), "--to", str(out), SID).exit_code == 0
    assert (out / "-home-user-proj" / f"{SID}.jsonl").read_bytes() == record(SID, 5) + b"\n"


def test_an_oversized_line_is_named_and_its_file_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "projects"
    proj = root / "-p"
    proj.mkdir(parents=True)
    big = record(SID, 1, blob="x" * 5000)
    (proj / f"{SID}.jsonl").write_bytes(record(SID, 0) + b"\n" + big + b"\n")
    monkeypatch.setenv("INGESTD_MAX_LINE_BYTES", "4096")
    db = tmp_path / "i.db"
    ingest(db, root)
    monkeypatch.delenv("INGESTD_MAX_LINE_BYTES")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["export", "--db", str(db), "--to", str(out)])
    assert r.exit_code == 1
    assert f"not written: -p/{SID}.jsonl: the line at byte" in r.output
    assert not (out / "-p" / f"{SID}.jsonl").exists()


def totals(db: Path) -> tuple[Any, ...]:
    cost = json.loads(run("cost", "--db", str(db), "--json").output)
    sessions = json.loads(run("sessions", "--db", str(db), "--json").output)
    return cost["totals"], cost["billed_messages"], sessions["count"]


@pytest.mark.corpus
def test_the_real_corpus_round_trips_byte_for_byte_and_reingests_to_the_same_totals(
    corpus: Path, tmp_path: Path
) -> None:
    source = tmp_path / "projects"
    shutil.copytree(corpus / "claude-projects", source)
    want = tree_files(source)
    doc, got = round_trip(source, tmp_path)
    assert doc["written"] == len(want)
    assert set(got) == set(want)
    assert [name for name in want if got[name] != want[name]] == []
    again = tmp_path / "again.db"
    ingest(again, tmp_path / "out")
    assert totals(again) == totals(tmp_path / "i.db")
