"""A refused ``ingestd serve`` leaves no database behind (docs/reference.md: no database is created).

Regression: with the port taken, ``serve --db new.db`` exited 2 but left ``new.db`` (0 bytes, made
by the lock) and ``new.db.lock``; ``sessions`` then said "needs migrations" instead of "no database".
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from unittest import mock

from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.daemon import lock as lock_mod


def serve(db: Path, port: int, tmp_path: Path) -> tuple[int, str]:
    (tmp_path / "empty").mkdir(exist_ok=True)
    args = ["serve", "--db", str(db), "--projects", str(tmp_path / "empty"), "--no-tail", "--port", str(port)]
    with mock.patch("ingestd.logs.forward_sqlite_log"):
        r = CliRunner().invoke(cli, args)
    return r.exit_code, r.output


def test_a_taken_port_leaves_no_database_lock_file_or_directory(tmp_path: Path) -> None:
    db = tmp_path / "made" / "for" / "new.db"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        code, out = serve(db, taken.getsockname()[1], tmp_path)
    assert code == 2 and "cannot listen" in out, out
    assert not (tmp_path / "made").exists()
    r = CliRunner().invoke(cli, ["sessions", "--db", str(db)])
    assert r.exit_code == 2 and "no database at" in r.output, r.output


def test_an_unsafe_file_found_after_the_lock_leaves_no_database(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    backups = d / "backups"
    backups.mkdir()
    os.chmod(backups, 0o777)
    code, out = serve(d / "new.db", 0, tmp_path)
    assert code == 2 and f"{backups}: mode 0777" in out, out
    assert sorted(os.listdir(d)) == ["backups"]


def test_an_existing_file_is_never_removed(tmp_path: Path) -> None:
    db = tmp_path / "mine.db"
    db.write_bytes(b"")
    os.chmod(db, 0o600)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        code, _ = serve(db, taken.getsockname()[1], tmp_path)
    assert code == 2 and db.exists()


def test_discard_keeps_a_file_another_process_locked_or_wrote(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    first = lock_mod.acquire(db)
    first.release()
    again = lock_mod.acquire(db)  # another start holds it now
    first.discard()
    assert db.exists()
    again.release()
    used = lock_mod.acquire(tmp_path / "y.db")
    (tmp_path / "y.db").write_bytes(b"SQLite format 3\0")
    used.discard()
    assert (tmp_path / "y.db").exists()


def test_an_unsafe_directory_is_refused_before_the_lock_creates_anything(tmp_path: Path) -> None:
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(d, 0o777)
    with mock.patch.object(lock_mod, "acquire", side_effect=AssertionError("locked before the check")):
        code, out = serve(d / "new.db", 0, tmp_path)
    assert code == 2 and f"{d}: directory mode 0777" in out, out
    assert os.listdir(d) == []
