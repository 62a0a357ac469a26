"""Unsafe files are refused, like ssh's StrictModes (SPEC §10); read-only media are read read-only.

Each case: the file, what is wrong with it, and the exact refusal (exit 2, the file's name and the
command that fixes it). The tests run as root here and in CI: ownership by another user is made
with ``os.chown`` to an unused uid (root can), so nothing is skipped for being root. A mode check
is about bits, which root's bypass of permissions does not change.

Regression: a database created by another user in a 1777 directory with mode 0666 was
used (its WAL and SHM then 0666 and that user's too), and a 0644 token file was accepted.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from click.testing import CliRunner

from ingestd import files
from ingestd.cli import cli
from ingestd.errors import ConfigError
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.support import can_bind_mount

OTHER_UID = 4242  # no such user: ``user_name`` shows the number
ME = files.user_name(os.geteuid())


def make_db(directory: Path) -> Path:
    directory.mkdir(mode=0o700, exist_ok=True)
    db = directory / "x.db"
    conn = connect(db)
    migrate(conn)
    conn.close()
    return db


def serve(db: Path, *extra: str) -> tuple[int, str]:
    """``ingestd serve`` in-process: the checks run before anything binds or opens the database.

    SQLite's log is not forwarded (``forward_sqlite_log`` is process-wide and would outlive the test:
    later tests in this process would see SQLite's warnings on stderr)."""
    with mock.patch("ingestd.logs.forward_sqlite_log"):
        r = CliRunner().invoke(cli, ["serve", "--db", str(db), "--no-tail", "--port", "0", *extra])
    return r.exit_code, r.output


def test_database_mode_0666_is_refused_naming_the_chmod(tmp_path: Path) -> None:
    db = make_db(tmp_path / "d")
    os.chmod(db, 0o666)
    code, out = serve(db)
    assert code == 2
    assert f"{db}: mode 0666: writable by group and others; fix: chmod 600 {db}" in out
    # the write commands refuse it too; nothing was opened
    (tmp_path / "p").mkdir()
    r = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(tmp_path / "p")])
    assert r.exit_code == 2 and f"fix: chmod 600 {db}" in r.output


def test_database_owned_by_another_user_is_refused_naming_the_chown(tmp_path: Path) -> None:
    db = make_db(tmp_path / "d")
    os.chown(db, OTHER_UID, OTHER_UID)
    code, out = serve(db)
    assert code == 2
    assert f"{db}: owned by {OTHER_UID}, not by {ME} (who runs ingestd); fix: chown {ME} {db}" in out


@pytest.mark.parametrize("suffix", ["-wal", "-shm", ".lock"])
def test_wal_shm_and_lock_files_are_checked_too(tmp_path: Path, suffix: str) -> None:
    db = make_db(tmp_path / "d")
    side = db.with_name(db.name + suffix)
    side.write_bytes(b"")
    os.chmod(side, 0o662)
    code, out = serve(db)
    assert code == 2
    assert f"{side}: mode 0662: writable by group and others; fix: chmod 600 {side}" in out
    os.chmod(side, 0o600)
    os.chown(side, OTHER_UID, 0)
    assert f"fix: chown {ME} {side}" in serve(db)[1]


def test_the_1777_attack_directory_then_a_world_writable_one(tmp_path: Path) -> None:
    # the reported attack: another user pre-creates the database in a sticky shared directory
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    db = make_db(shared)
    os.chmod(db, 0o666)
    os.chown(db, OTHER_UID, OTHER_UID)
    code, out = serve(db)
    assert code == 2
    assert f"fix: chown {ME} {db}" in out and f"fix: chmod 600 {db}" in out
    assert str(shared) + ":" not in out  # 1777: others cannot replace files there
    # without the sticky bit, anyone can swap the database for another
    os.chown(db, os.geteuid(), os.getegid())
    os.chmod(db, 0o600)
    os.chmod(shared, 0o777)
    code, out = serve(db)
    assert code == 2
    assert (
        f"{shared}: directory mode 0777: others can replace the files in it (writable, no sticky bit); "
        f"fix: chmod o-w {shared}"
    ) in out


def test_backups_are_checked(tmp_path: Path) -> None:
    db = make_db(tmp_path / "d")
    backups = tmp_path / "d" / "backups"
    backups.mkdir(mode=0o700)
    old = backups / "ingestd-20260101T000000.000Z.db"
    old.write_bytes(b"")
    os.chmod(old, 0o646)
    code, out = serve(db)
    assert code == 2 and f"{old}: mode 0646: writable by others; fix: chmod 600 {old}" in out


def test_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    db = make_db(tmp_path / "d")
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    os.chmod(token, 0o644)
    code, out = serve(db, "--token-file", str(token))
    assert code == 2
    assert f"{token}: mode 0644: readable or writable by group and others; fix: chmod 600 {token}" in out
    assert "s3cret" not in out
    os.chmod(token, 0o600)
    assert files.problems([token], secret=True) == []
    os.chown(token, OTHER_UID, 0)
    assert f"fix: chown {ME} {token}" in serve(db, "--token-file", str(token))[1]


def test_own_private_files_pass_and_a_symlink_is_checked_at_its_target(tmp_path: Path) -> None:
    db = make_db(tmp_path / "d")
    assert files.problems(files.database_files(db)) == []
    link = tmp_path / "link.db"
    link.symlink_to(db)
    os.chmod(db, 0o664)
    assert [f.path for f in files.problems(files.database_files(link))] == [str(db)]
    quoted = tmp_path / "it's here"
    quoted.mkdir()
    (quoted / "f").write_bytes(b"")
    os.chmod(quoted / "f", 0o660)
    assert files.file_problems(quoted / "f")[0].fix == f"chmod 600 {shlex.quote(str(quoted / 'f'))}"


# -- read-only media -------------------------------------------------------------------------


def test_read_commands_on_read_only_media_open_the_database_read_only(tmp_path: Path) -> None:
    if not can_bind_mount(tmp_path, read_only=True):
        pytest.skip("needs a read-only bind mount (unshare -m and mount); not permitted here")
    src, mnt = tmp_path / "src", tmp_path / "mnt"
    mnt.mkdir()
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "projects"
    r = CliRunner().invoke(cli, ["ingest", "--db", str(src / "x.db"), "--projects", str(fixtures)])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in src.iterdir()) == ["x.db"]  # closed cleanly: no -wal, no -shm to reuse
    py = shlex.quote(sys.executable)
    script = " && ".join(
        [
            f"mount --bind -o ro {src} {mnt}",
            f"{py} -m ingestd sessions --db {mnt / 'x.db'} --json",
            f"{py} -m ingestd cost --db {mnt / 'x.db'} --json",
            f"{py} -c 'from pathlib import Path; from ingestd.http.api import not_writable; "
            f'print(not_writable(Path("{mnt / "x.db"}")))\'',
        ]
    )
    r2 = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
    assert r2.returncode == 0, r2.stderr
    assert '"count": 4' in r2.stdout and '"totals"' in r2.stdout
    assert r2.stdout.rstrip().endswith(f"{mnt} is on a read-only file system")


@pytest.fixture
def no_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ingestd serve`` runs ``daemon.main.serve`` (its checks, its lock) but serves nothing and
    returns, without ``run``'s process-wide logging set-up."""
    from ingestd.daemon import main as daemon_main
    from ingestd.daemon.config import ServeConfig

    async def no_serving(*_: Any) -> None:
        return None

    def run(cfg: ServeConfig, *, held: Any, sock: Any, log_level: str) -> None:
        asyncio.run(daemon_main.serve(cfg, held=held, sock=sock))

    monkeypatch.setattr(daemon_main, "_serve_on", no_serving)
    monkeypatch.setattr(daemon_main, "run", run)


def test_serve_checks_the_files_once_before_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_daemon: None
) -> None:
    # Regression: the command checked the database's files, then the daemon checked them (and the backups)
    # again after the lock; now the command's one check covers the backups too
    db = make_db(tmp_path / "d")
    checked: list[Path] = []
    real_files = files.database_files

    def counting(db_path: Path) -> list[Path]:
        checked.append(db_path)
        return real_files(db_path)

    monkeypatch.setattr(files, "database_files", counting)
    code, out = serve(db)
    assert code == 0, out
    assert checked == [db]
    # the backups are in that one check: a loose one refuses the start
    old = db.parent / "backups" / "ingestd-20260101T000000.000Z.db"
    old.parent.mkdir(mode=0o700)
    old.write_bytes(b"")
    os.chmod(old, 0o646)
    code, out = serve(db)
    assert code == 2 and f"fix: chmod 600 {old}" in out


def test_serve_checks_the_backups_where_a_linked_database_writes_them(tmp_path: Path, no_daemon: None) -> None:
    # a database reached through a link has its backups next to the link (``backup_dir_from``, as
    # ``ingestd backup`` and the daemon's schedule write them); the daemon used to check the ones
    # next to the link's target instead
    target = make_db(tmp_path / "real")
    (tmp_path / "link").mkdir(mode=0o700)
    db = tmp_path / "link" / "x.db"
    db.symlink_to(target)
    loose = tmp_path / "link" / "backups" / "x-20260101T000000.000Z.db"
    loose.parent.mkdir(mode=0o700)
    loose.write_bytes(b"")
    os.chmod(loose, 0o646)
    code, out = serve(db)
    assert code == 2 and f"fix: chmod 600 {loose}" in out, out
    # the daemon started without the command (it takes the lock itself) checks the same directory
    from ingestd.daemon.config import ServeConfig
    from ingestd.daemon.main import serve as serve_daemon

    with pytest.raises(ConfigError, match=f"fix: chmod 600 {loose}"):
        asyncio.run(serve_daemon(ServeConfig(db_path=db, port=0)))
    loose.unlink()
    r = CliRunner().invoke(cli, ["backup", "--db", str(db), "--json"])
    assert r.exit_code == 0, r.output
    assert [p.parent for p in (tmp_path / "link" / "backups").iterdir()] == [loose.parent]
    assert not (tmp_path / "real" / "backups").exists()
