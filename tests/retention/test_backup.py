"""Backup: consistent under concurrent writes, checked, private, retained; a restore verifies."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.errors import StorageError
from ingestd.retention import backup as bk
from ingestd.store.connection import connect, write_txn

NOW = datetime(2026, 4, 3, 12, 30, 45, tzinfo=UTC)


def test_backup_is_named_private_checked_and_recorded(db_path: Path, tmp_path: Path) -> None:
    res = bk.backup(db_path, now=NOW, directory=tmp_path / "bk")
    p = Path(res.path)
    assert p.name == "ingestd-20260403T123045.000Z.db"
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert res.integrity == "ok" and res.counts["events_raw"] == 20
    assert not list((tmp_path / "bk").glob(".*partial"))
    conn = connect(db_path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'last_backup_at'").fetchall() == [
        ("2026-04-03T12:30:45.000Z",)
    ]


def test_default_directory_is_next_to_the_database(db_path: Path) -> None:
    res = CliRunner().invoke(cli, ["backup", "--db", str(db_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = orjson.loads(res.stdout)
    assert Path(doc["path"]).parent == db_path.parent / "backups"


def test_backup_under_concurrent_writes_is_consistent(db_path: Path, tmp_path: Path) -> None:
    # Grow the database so the copy takes a while, then keep writing during it.
    conn = connect(db_path)
    blob = b"x" * 4000

    def bulk(c: object) -> None:
        for i in range(3000):
            conn.execute(
                "INSERT INTO events_raw (idempotency_key, source, event_type, payload, received_at, origin) "
                "VALUES (?, 'jsonl', 'user', ?, '2026-02-01T00:00:00.000Z', 'big.jsonl')",
                (f"bulk:{i}", blob),
            )

    write_txn(conn, bulk)
    stop = threading.Event()
    written = [0]

    def writer() -> None:
        w = connect(db_path)
        i = 0
        while not stop.is_set():

            def one(c: object, i: int = i) -> None:
                w.execute(
                    "INSERT INTO events_raw (idempotency_key, source, event_type, payload, received_at, "
                    "session_id, origin) VALUES (?, 'hook', 'Stop', '{}', '2026-03-01T00:00:00.000Z', 'sess-0', "
                    "'hook')",
                    (f"live:{i}",),
                )
                w.execute(
                    "INSERT INTO events (raw_event_id, session_id, event_type, occurred_at) "
                    "VALUES ((SELECT max(id) FROM events_raw), 'sess-0', 'Stop', '2026-03-01T00:00:00.000Z')"
                )

            write_txn(w, one)
            i += 1
            written[0] = i
            # Pace like a real writer between commits; a tight loop starves other writers' busy handlers.
            stop.wait(0.002)
        w.close()

    t = threading.Thread(target=writer)
    t.start()
    try:
        deadline = datetime.now(UTC) + timedelta(seconds=10)
        while written[0] < 5 and datetime.now(UTC) < deadline:
            stop.wait(0.01)
        results = [bk.backup(db_path, now=NOW + timedelta(seconds=s), directory=tmp_path / "bk") for s in range(3)]
    finally:
        stop.set()
        t.join()
    assert written[0] > 5
    for res in results:
        copy = connect(res.path)
        assert copy.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        hooks = copy.execute("SELECT count(*) FROM events_raw WHERE source = 'hook'").fetchall()[0][0]
        events = copy.execute("SELECT count(*) FROM events").fetchall()[0][0]
        assert hooks == events  # each raw row and its events row are in the copy together, or neither
        assert copy.execute("SELECT count(*) FROM events_raw WHERE origin = 'big.jsonl'").fetchall() == [(3000,)]
        assert 10 <= hooks <= 10 + written[0]


def test_retention_keeps_newest_seven_regardless_of_age(tmp_path: Path) -> None:
    d = tmp_path / "bk"
    d.mkdir()
    old = datetime(2025, 1, 1, tzinfo=UTC)
    names = [bk.backup_name(old + timedelta(days=i)) for i in range(10)]
    for n in [*names, "notes.txt", "ingestd-garbage.db"]:
        (d / n).write_bytes(b"")
    res = bk.apply_retention(d, now=NOW, retention_days=30, keep_newest=7, dry_run=True)
    assert res.deleted == names[:3]
    assert len(list(d.iterdir())) == 12
    res = bk.apply_retention(d, now=NOW, retention_days=30, keep_newest=7)
    assert sorted(p.name for p in d.iterdir()) == sorted([*names[3:], "notes.txt", "ingestd-garbage.db"])


def test_retention_keeps_recent_ones_beyond_seven() -> None:
    names = [bk.backup_name(NOW - timedelta(days=i)) for i in range(40)]
    gone = bk.to_delete(names, NOW, 30, 7)
    assert sorted(gone) == sorted(names[31:])  # day 30 exactly is not older than 30 days


def test_restore_a_backup_and_verify_it(db_path: Path, tmp_path: Path) -> None:
    res = bk.backup(db_path, now=NOW, directory=tmp_path / "bk")
    restored = tmp_path / "restored" / "ingestd.db"
    restored.parent.mkdir()
    shutil.copyfile(res.path, restored)
    out = CliRunner().invoke(cli, ["verify", "--db", str(restored), "--json"])
    assert out.exit_code == 0, out.output
    assert orjson.loads(out.stdout)["ok"] is True


def test_backup_cli_human_output_and_settings_dir(db_path: Path, tmp_path: Path) -> None:
    env = {"INGESTD_BACKUP_DIR": str(tmp_path / "from-env"), "INGESTD_CONFIG": os.environ["INGESTD_CONFIG"]}
    res = CliRunner().invoke(cli, ["backup", "--db", str(db_path)], env=env)
    assert res.exit_code == 0, res.output
    assert "integrity ok" in res.stdout and "events_raw: 20 rows" in res.stdout
    assert len(list((tmp_path / "from-env").glob("ingestd-*.db"))) == 1


def test_backup_of_missing_database_is_a_usage_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["backup", "--db", str(tmp_path / "nope.db")])
    assert res.exit_code == 2
    assert not (tmp_path / "nope.db").exists()


def test_backups_in_the_same_second_or_millisecond_never_collide(db_path: Path, tmp_path: Path) -> None:
    d = tmp_path / "bk"
    first = bk.backup(db_path, now=NOW, directory=d)
    second = bk.backup(db_path, now=NOW, directory=d)
    third = bk.backup(db_path, now=NOW + timedelta(milliseconds=400), directory=d)
    paths = [first.path, second.path, third.path]
    assert len(set(paths)) == 3
    names = [Path(p).name for p in paths]
    assert names == sorted(names), "names sort by time"
    assert [bk.taken_at(n) for n in names] == [NOW, NOW + timedelta(milliseconds=1), NOW + timedelta(milliseconds=400)]
    assert sorted(p.name for p in d.iterdir()) == names  # no partial or placeholder left
    for p in paths:
        assert connect(Path(p), readonly=True).execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_older_second_stamped_names_are_still_backups() -> None:
    assert bk.taken_at("ingestd-20260403T120000Z.db") == datetime(2026, 4, 3, 12, tzinfo=UTC)
    assert bk.taken_at("ingestd-20260403T120000.250Z.db") == datetime(2026, 4, 3, 12, 0, 0, 250000, tzinfo=UTC)
    assert bk.taken_at("ingestd-20260403T120000.25Z.db") is None


def test_two_databases_in_one_folder_keep_their_own_backups(db_path: Path, tmp_path: Path) -> None:
    # both use backups/ next to them: the second's retention once deleted the first's backups
    # (one name pattern for every database), and `keep_newest` counted the two together
    other = db_path.parent / "team.db"
    shutil.copy(db_path, other)
    mine = [bk.backup(db_path, now=NOW - timedelta(days=40 + i)).path for i in range(3)]
    theirs = [bk.backup(other, now=NOW - timedelta(days=i), keep_newest=1, retention_days=1).path for i in range(3)]
    assert all(Path(p).exists() for p in mine)
    assert [Path(p).name[:5] for p in theirs] == ["team-"] * 3
    # team's within a day stay (the newest, and the one exactly a day old), its older one goes;
    # ingestd's, all older than 40 days, stay untouched
    res = bk.apply_retention(
        db_path.parent / "backups", now=NOW, retention_days=1, keep_newest=1, stem=bk.backup_stem(other)
    )
    assert res.kept == [Path(theirs[1]).name, Path(theirs[0]).name] and res.deleted == [Path(theirs[2]).name]
    assert all(Path(p).exists() for p in mine)
    assert bk.backup_stem(db_path) == "ingestd" and bk.taken_at(Path(mine[0]).name, "team") is None


def test_a_backup_without_room_says_so_and_leaves_nothing(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: on a full disk `ingestd backup` said "database error: not an error" (exit 2) and
    # left the copy's journal behind
    monkeypatch.setattr(bk, "_free_bytes", lambda d: 4096)
    res = CliRunner().invoke(cli, ["backup", "--db", str(db_path), "--dir", str(tmp_path / "bk")])
    assert res.exit_code == 2
    size = os.path.getsize(db_path)
    assert f"no space left on {tmp_path / 'bk'}: {size} bytes needed, 4096 free" in res.output
    assert not (tmp_path / "bk").exists()  # the folder it made is gone with the copy


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (root only; skipped elsewhere), unmounted afterwards."""
    d = tmp_path / "small"
    d.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(d)]).returncode:
        pytest.skip("needs root to mount a small tmpfs")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=False)


def test_a_disk_that_fills_during_the_copy_is_named_with_the_bytes_needed(
    db_path: Path, small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the space check before the copy passes (another writer fills the disk meanwhile): SQLite's
    # own error said "not an error"; the failure is diagnosed again and the partial files go
    conn = connect(db_path)
    write_txn(conn, lambda c: c.execute("CREATE TABLE filler AS SELECT randomblob(3000000) AS x"))
    conn.close()
    real, calls = bk._free_bytes, [0]

    def free_at_first(d: Path) -> int:
        calls[0] += 1
        return 1 << 40 if calls[0] == 1 else real(d)

    monkeypatch.setattr(bk, "_free_bytes", free_at_first)
    with pytest.raises(StorageError, match=rf"^no space left on {small_disk}: \d+ bytes needed, \d+ free") as e:
        bk.backup(db_path, now=NOW, directory=small_disk)
    assert e.value.context["needed_bytes"] > e.value.context["free_bytes"]
    assert list(small_disk.iterdir()) == []
