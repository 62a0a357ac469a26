"""A database this user may read but not write: `backup` copies it (it only reads it) and
leaves no empty folder when it fails; a writer names the file it cannot write (a `-shm`/`-wal` a
read-only access left 0444) and says what to do. Root writes anything: the commands run in a child
that dropped to nobody."""

from __future__ import annotations

import _strptime  # noqa: F401  (imported before the fork: nobody may not read this interpreter's stdlib)
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.store.connection import connect
from tests.reliability.test_bad_transcripts import _as_nobody

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


@pytest.fixture
def work() -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(prefix="ingestd-nobody-"))  # pytest's tmp_path is private to root
    try:
        db = work / "r.db"
        assert CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(FIXTURES)]).exit_code == 0
        shutil.copytree(FIXTURES, work / "projects")
        for p in [work, *work.rglob("*")]:
            if os.geteuid() == 0:
                os.chown(p, 65534, 65534)
        work.chmod(0o700)
        yield work
    finally:
        shutil.rmtree(work)


def _cli(work: Path, *args: str) -> tuple[int, str]:
    """Run ``ingestd ARGS`` as nobody (or as this user when not root): (exit code, stderr)."""
    err = work / "stderr.txt"

    def run() -> int:
        env = {"HOME": str(work), "XDG_CONFIG_HOME": str(work / "cfg"), "INGESTD_CONFIG": None}
        res = CliRunner().invoke(cli, list(args), env=env)
        err.write_text(res.stderr + (repr(res.exception) if res.exit_code == 1 else ""))
        return res.exit_code

    try:
        code = _as_nobody(run) if os.geteuid() == 0 else run()
    except AssertionError as e:
        if "Operation not permitted" in str(e):
            pytest.skip("cannot drop privileges here")
        raise
    return code, err.read_text()


def test_backup_of_a_database_this_user_can_only_read(work: Path) -> None:
    db = work / "r.db"
    db.chmod(0o444)
    code, err = _cli(work, "backup", "--db", str(db))
    assert code == 0, err  # Regression: exit 2 "attempt to write a readonly database"
    made = list((work / "backups").glob("r-*.db"))
    assert len(made) == 1
    assert connect(made[0], readonly=True).execute("SELECT count(*) FROM events_raw").fetchall()[0][0] > 0
    # nothing recorded in a database the user may not write
    assert not connect(db, readonly=True).execute("SELECT 1 FROM meta WHERE key = 'last_backup_at'").fetchall()


def test_a_failed_backup_leaves_no_empty_folder(work: Path) -> None:
    bad = work / "bad.db"  # opening it fails, as the read-only file did: no backups/ left behind
    bad.write_bytes(b"not a database" * 100)
    if os.geteuid() == 0:
        os.chown(bad, 65534, 65534)
    bad.chmod(0o600)
    code, err = _cli(work, "backup", "--db", str(bad), "--dir", str(work / "b" / "c"))
    assert code == 2 and "is not an ingestd database" in err, err
    code, err = _cli(work, "backup", "--db", str(bad))
    assert code == 2 and "is not an ingestd database" in err, err
    assert not (work / "backups").exists() and not (work / "b").exists()


def test_a_writer_names_the_wal_or_shm_it_cannot_write(work: Path) -> None:
    db = work / "r.db"
    for suffix in ("-wal", "-shm"):  # as a read-only access by this user leaves them: the database's mode
        side = Path(str(db) + suffix)
        side.write_bytes(b"")
        if os.geteuid() == 0:
            os.chown(side, 65534, 65534)
        side.chmod(0o444)
        code, err = _cli(work, "ingest", "--db", str(db), "--projects", str(work / "projects"))
        assert code == 2, err
        assert f"{side} (its {suffix} file) is not writable by this user" in err, err
        assert f"chmod u+w {side}" in err, err
        side.unlink()
    db.chmod(0o444)
    code, err = _cli(work, "migrate", "--db", str(db))
    assert code == 2 and f"{db} (the database file) is not writable by this user" in err, err


def test_serve_checks_it_can_write_the_database_before_it_starts(work: Path) -> None:
    from ingestd.daemon.checks import check_files
    from ingestd.errors import StorageError

    db = work / "r.db"
    db.chmod(0o444)

    def run() -> int:
        try:
            check_files(db, None)
        except StorageError as e:
            return 1 if f"{db} (the database file) is not writable by this user" in e.message else 2
        return 0

    assert (_as_nobody(run) if os.geteuid() == 0 else run()) == 1


def test_a_read_only_refusal_from_sqlite_says_what_to_check() -> None:
    import apsw

    from ingestd.store.connection import translate

    e = translate(apsw.ReadOnlyError("attempt to write a readonly database"))
    assert e.message.startswith("database error: attempt to write a readonly database: this user cannot write")
    assert "-wal / -shm" in e.message and e.exit_code == 2
