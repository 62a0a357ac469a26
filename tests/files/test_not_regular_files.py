"""A path the user names that is not a regular file (a FIFO, a device, a directory) is refused by
kind before it is opened, and the advice is naming another file, never ``chmod`` on a path the
user does not own (``files.file_problems``, ``files.read_capped``).

Regression: ``INGESTD_CONFIG=/dev/null`` and ``--db /dev/null`` said ``fix: chmod 600
/dev/null``, ``INGESTD_CONFIG=/tmp`` said ``chmod 700 /tmp``, a FIFO as the config file or as
``settings.json`` hung ``serve`` and ``hooks install`` forever, ``sessions --db /dev/null`` said to
run migrate.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ingestd import files
from ingestd.errors import ConfigError, InputError
from ingestd.settings import load_config_file
from ingestd.store.connection import connect


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ingestd", *args], capture_output=True, text=True, timeout=timeout, env=full
    )


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    f = tmp_path / "f"
    os.mkfifo(f)
    return f


def test_a_fifo_is_read_without_waiting_for_a_writer_and_refused(fifo: Path) -> None:
    with pytest.raises(InputError, match=r"f is a FIFO \(named pipe\), not a regular file"):
        files.read_capped(fifo, 10, "price file", InputError)  # would block in open() without O_NONBLOCK


@pytest.mark.parametrize(("path", "kind"), [("/dev/null", "a character device"), ("/tmp", "a directory")])
def test_system_paths_are_refused_by_kind_with_no_chmod(tmp_path: Path, path: str, kind: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_config_file(Path(path), required=True)
    assert f"{path}: is {kind}, not a regular file; fix: name a regular file instead of {path}" in str(e.value)
    assert "chmod" not in str(e.value)


def test_config_fifo_does_not_hang_serve(tmp_path: Path, fifo: Path) -> None:
    r = run("serve", "--db", str(tmp_path / "x.db"), env={"INGESTD_CONFIG": str(fifo)}, timeout=30)
    assert r.returncode == 2, r.stderr
    assert "is a FIFO (named pipe), not a regular file" in r.stderr
    assert "chmod" not in r.stderr
    assert not (tmp_path / "x.db").exists()


def test_settings_json_fifo_does_not_hang_hooks_install(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    os.mkfifo(home / ".claude" / "settings.json")
    r = run("hooks", "install", env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}, timeout=30)
    assert r.returncode == 2, r.stderr
    assert "settings.json is a FIFO (named pipe), not a regular file" in r.stderr


@pytest.mark.parametrize("cmd", [["ingest", "--projects", "{p}"], ["sessions"], ["prune", "--dry-run"]])
def test_a_device_as_the_database_is_refused_by_kind(tmp_path: Path, cmd: list[str]) -> None:
    (tmp_path / "p").mkdir()
    args = [a.replace("{p}", str(tmp_path / "p")) for a in cmd]
    r = run(*args, "--db", "/dev/null")
    assert r.returncode == 2, r.stderr
    assert "/dev/null" in r.stderr and "a character device" in r.stderr
    assert "chmod" not in r.stderr and "migrate" not in r.stderr


def test_a_loose_file_of_root_accepted_as_the_config_is_not_to_be_chmodded(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    f = tmp_path / "theirs"
    f.write_text("")
    os.chown(f, 65534, 65534)
    os.chmod(f, 0o666)
    # as if a user (65534's file, checked for uid 65534 while root runs) cannot chmod it
    assert [g.fix for g in files.file_problems(f, uid=65534)] == [f"use a file of your own instead of {f}"]
    assert [g.fix for g in files.file_problems(f)][1:] == [f"chmod 600 {f}"]  # after the chown


def test_a_file_where_the_backups_directory_should_be_is_a_finding(tmp_path: Path) -> None:
    (tmp_path / "bk").write_text("")
    found = files.store_problems(tmp_path / "x.db", tmp_path / "bk")
    assert [(f.problem, f.fix) for f in found] == [
        ("is a regular file, not a directory", f"name a directory instead of {tmp_path / 'bk'}")
    ]


@pytest.mark.parametrize("cmd", [["migrate", "--status"], ["tree", "x"], ["replay"]])
def test_a_fifo_as_the_database_is_refused_without_waiting(fifo: Path, cmd: list[str]) -> None:
    r = run(*cmd, "--db", str(fifo), timeout=30)  # SQLite's open waited on the FIFO for ever
    assert r.returncode == 2, r.stderr
    assert f"{fifo} is a FIFO (named pipe), not a regular database file" in r.stderr


def test_connect_refuses_a_device_by_kind() -> None:
    with pytest.raises(ConfigError, match="/dev/null is a character device, not a regular database file"):
        connect("/dev/null", readonly=True)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc/self/fd (Linux)")
@pytest.mark.parametrize("kind", ["directory", "fifo", "device", "too large"])
def test_a_refused_file_leaves_no_descriptor_open_and_names_the_path(tmp_path: Path, kind: str) -> None:
    # review: a directory leaked its descriptor on each call (open(fd) raised IsADirectoryError with
    # fd unclosed; 50 calls, 50 descriptors) and the error named "[Errno 21] ... 3", not the path
    path = {"directory": tmp_path, "device": Path("/dev/zero"), "fifo": tmp_path / "f", "too large": tmp_path / "big"}[
        kind
    ]
    if kind == "fifo":
        os.mkfifo(path)
    if kind == "too large":
        path.write_bytes(b"x" * 11)
    before = _open_fds()
    for _ in range(50):
        with pytest.raises(InputError) as e:
            files.read_capped(path, 10, "price file", InputError)
        assert str(path) in str(e.value) and "nothing was read" in str(e.value)
    assert _open_fds() == before


def test_a_fifo_as_the_database_does_not_hang_ingest(tmp_path: Path, fifo: Path) -> None:
    # the lock ingest holds against `ship --set-host-id` opens the file first: without waiting
    (tmp_path / "p").mkdir()
    r = run("ingest", "--projects", str(tmp_path / "p"), "--db", str(fifo), timeout=30)
    assert r.returncode == 2, r.stderr
    assert "is a FIFO (named pipe), not a regular file" in r.stderr
