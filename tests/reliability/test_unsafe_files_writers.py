"""Every command that writes refuses what ``ingest`` and ``serve`` refuse (SPEC §10, ``ingestd.files``).

Regression: ``migrate`` applied migrations to a 0666 database, ``backup`` copied a 0666 database
and wrote into a 0777 (world-writable, not sticky) directory, all with exit 0. Each writer is run
on each unsafe file; the refusal is exit 2, names the file and the fix, and nothing is written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd import files
from ingestd.cli import cli
from tests.reliability.test_unsafe_files import make_db

# every command that writes the local database (or its backups), with the options it needs
WRITERS = {
    "ingest": ["ingest", "--projects", "{empty}"],
    "migrate": ["migrate"],
    "backup": ["backup"],
    "prune": ["prune"],
    "pricing set": ["pricing", "set", "m", "--effective-from", "2026-01-01T00:00:00Z", "--input", "1"],
    "pricing load": ["pricing", "load", "{prices}"],
    "verify": ["verify"],
    "replay": ["replay"],  # opens the live database to write (the snapshot), copies the log
}


def invoke(args: list[str], db: Path, tmp_path: Path) -> tuple[int, str]:
    (tmp_path / "empty").mkdir(exist_ok=True)
    prices = tmp_path / "prices.json"
    prices.write_text('[{"model": "m", "effective_from": "2026-01-01T00:00:00Z", "rates": {"input": "1"}}]')
    filled = [a.format(empty=tmp_path / "empty", prices=prices) for a in args]
    r = CliRunner().invoke(cli, [*filled, "--db", str(db)])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.output


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_a_0666_database_is_refused_by_every_writer(tmp_path: Path, name: str) -> None:
    db = make_db(tmp_path / "d")
    os.chmod(db, 0o666)
    before = db.read_bytes()
    code, out = invoke(WRITERS[name], db, tmp_path)
    assert code == 2, (name, out)
    assert f"{db}: mode 0666: writable by group and others; fix: chmod 600 {db}" in out, out
    assert db.read_bytes() == before
    assert not (tmp_path / "d" / "backups").exists()


def test_migrate_refuses_a_new_0666_file_and_applies_nothing(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir(mode=0o700)
    db = tmp_path / "p" / "new.db"
    db.write_bytes(b"")
    os.chmod(db, 0o666)
    code, out = invoke(["migrate"], db, tmp_path)
    assert code == 2 and "fix: chmod 600" in out, out
    assert db.stat().st_size == 0


def test_backup_refuses_a_world_writable_directory(tmp_path: Path) -> None:
    db = make_db(tmp_path / "d")
    wd = tmp_path / "wd"
    wd.mkdir()
    os.chmod(wd, 0o777)
    code, out = invoke(["backup", "--dir", str(wd)], db, tmp_path)
    assert code == 2, out
    assert f"{wd}: mode 0777: writable by group and others; fix: chmod 700 {wd}" in out
    assert os.listdir(wd) == []
    # a directory still to be made, inside a world-writable one without the sticky bit
    code, out = invoke(["backup", "--dir", str(wd / "new")], db, tmp_path)
    assert code == 2 and f"{wd}: directory mode 0777" in out, out
    assert os.listdir(wd) == []
    os.chmod(wd, 0o1777)  # sticky, like /tmp: others cannot replace our files
    code, out = invoke(["backup", "--dir", str(wd / "new")], db, tmp_path)
    assert code == 0, out


def test_replay_refuses_a_world_writable_work_directory(tmp_path: Path) -> None:
    db = make_db(tmp_path / "d")
    wd = tmp_path / "wd"
    wd.mkdir()
    os.chmod(wd, 0o777)
    code, out = invoke(["replay", "--workdir", str(wd)], db, tmp_path)
    assert code == 2 and f"{wd}: directory mode 0777" in out, out
    assert os.listdir(wd) == []


def test_prune_refuses_loose_backups_it_would_delete_among(tmp_path: Path) -> None:
    db = make_db(tmp_path / "d")
    backups = tmp_path / "d" / "backups"
    backups.mkdir(mode=0o700)
    old = backups / "x-20200101T000000.000Z.db"
    old.write_bytes(b"")
    os.chmod(old, 0o666)
    code, out = invoke(["prune"], db, tmp_path)
    assert code == 2 and f"{old}: mode 0666" in out, out
    assert old.exists()


def test_a_loose_backups_directory_holding_backups_is_one_finding(tmp_path: Path) -> None:
    # it was reported twice (as the backups' holding directory and as the backups directory), each
    # with its own fix
    db = make_db(tmp_path / "d")
    backups = tmp_path / "backups"
    backups.mkdir()
    (backups / "x-20260101T000000.000Z.db").write_bytes(b"")
    os.chmod(backups / "x-20260101T000000.000Z.db", 0o600)
    os.chmod(backups, 0o777)
    found = files.store_problems(db, backups)
    paths = [f.path for f in found]
    assert str(backups) in paths and len(paths) == len(set(paths)), found
