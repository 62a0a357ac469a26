"""Errors that say what to do: a database on a read-only file system, a file that is
not a database, a dangling ``settings.json`` link.

Regressions: ``ingest``, ``verify``, ``migrate`` on a read-only mount said "database error: unable
to open database file"; ``backup --dir <writable>`` and ``replay --workdir <writable>`` of a
read-only database failed the same way; ``replay`` there did not mention ``--workdir``; a file
that is not a database said only "file is not a database"; a dangling ``settings.json`` link said
"No such file or directory (/nonexistent/.target.tmpNNN)".
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from tests.support import can_bind_mount

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


def test_a_file_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    f = tmp_path / "notes.db"
    f.write_text("not a database, only some text that is long enough to be a page header or more\n" * 2)
    f.chmod(0o600)
    for cmd in (["sessions"], ["ingest", "--projects", str(FIXTURES)], ["verify"], ["replay"]):
        r = CliRunner().invoke(cli, [*cmd, "--db", str(f)])
        assert r.exit_code == 2, r.output
        assert f"{f} is not an ingestd database (SQLite: file is not a database): check --db" in r.output


def test_a_dangling_settings_link_says_so_and_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    gone = tmp_path / "gone" / "settings.json"
    os.symlink(gone, home / ".claude" / "settings.json")
    r = CliRunner().invoke(cli, ["hooks", "install"], env={"HOME": str(home), "CLAUDE_CONFIG_DIR": None})
    assert r.exit_code == 2, r.output
    assert f"is a symbolic link to {gone}, whose directory {gone.parent} does not exist" in r.output
    assert not gone.parent.exists()


def test_a_link_into_an_existing_directory_is_written_through(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (tmp_path / "dots").mkdir()
    os.symlink(tmp_path / "dots" / "settings.json", home / ".claude" / "settings.json")
    r = CliRunner().invoke(cli, ["hooks", "install"], env={"HOME": str(home), "CLAUDE_CONFIG_DIR": None})
    assert r.exit_code == 0, r.output
    assert "ingestd.forward" in (tmp_path / "dots" / "settings.json").read_text()


def test_read_only_media_errors_say_what_to_do(tmp_path: Path) -> None:
    if not can_bind_mount(tmp_path, read_only=True):
        pytest.skip("needs a read-only bind mount (unshare -m and mount); not permitted here")
    src, mnt, out = tmp_path / "src", tmp_path / "mnt", tmp_path / "out"
    mnt.mkdir()
    out.mkdir(mode=0o700)
    r = CliRunner().invoke(cli, ["ingest", "--db", str(src / "x.db"), "--projects", str(FIXTURES)])
    assert r.exit_code == 0, r.output
    py = shlex.quote(sys.executable)
    db = mnt / "x.db"
    steps = [
        ["ingest", "--projects", str(FIXTURES)],
        ["verify"],
        ["backup"],
        ["backup", "--dir", str(out)],
        ["replay"],
        ["replay", "--workdir", str(out)],
    ]
    lines = [f"mount --bind -o ro {src} {mnt}"] + [
        f"echo '== {i}'; {py} -m ingestd {shlex.join(s)} --db {db} 2>&1; echo \"rc=$?\"" for i, s in enumerate(steps)
    ]
    r2 = subprocess.run(["unshare", "-m", "sh", "-c", "; ".join(lines)], capture_output=True, text=True, timeout=300)
    parts = {int(p.split("\n", 1)[0]): p.split("\n", 1)[1] for p in r2.stdout.split("== ")[1:]}
    writes = f"{db} is on a read-only file system and this command writes to the database"
    assert writes in parts[0] and "rc=2" in parts[0]
    assert writes in parts[1] and "rc=2" in parts[1]
    assert f"the backups directory {mnt / 'backups'} is on a read-only file system: pass --dir" in parts[2]
    assert "rc=0" in parts[3], parts[3]
    assert len(list(out.glob("x-*.db"))) == 1
    assert "pass --workdir DIR on a writable one" in parts[4] and "rc=2" in parts[4]
    assert "rc=0" in parts[5], parts[5]
