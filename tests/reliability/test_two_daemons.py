"""Two daemons on one database: refused however the second spells the path (SPEC §12).

A real ``ingestd serve`` runs; a second one is started on a hard link, a symlink, a relative
path and a bind mount of the same file (each on its own port, so only the lock can refuse it). It
must exit 2 naming the first daemon's pid, and the first keeps answering.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.daemon import Daemon
from tests.support import can_bind_mount, free_port

SERVE = [sys.executable, "-m", "ingestd", "serve", "--no-tail", "--projects", "/nonexistent"]


def second(db: str, cwd: Path, mount: str | None = None) -> subprocess.CompletedProcess[str]:
    """A second ``serve`` on ``db``; with ``mount``, in a private mount namespace after that command."""
    env = {**os.environ, "INGESTD_SCHEDULE_ENABLED": "false"}
    argv = [*SERVE, "--db", db, "--port", str(free_port())]
    if mount is not None:
        argv = ["unshare", "-m", "sh", "-c", f"{mount} && exec {shlex.join(argv)}"]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.timeout(180)
def test_second_daemon_refused_through_hard_link_symlink_relative_path_and_bind_mount(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    db = data / "db.sqlite"
    d = Daemon(db, tmp_path / "projects", free_port(), tmp_path / "serve.log")
    d.start()
    try:
        assert d.proc is not None
        os.link(db, tmp_path / "hard.sqlite")
        (tmp_path / "link.sqlite").symlink_to(db)
        spellings: dict[str, tuple[str, str | None]] = {
            "hard link": (str(tmp_path / "hard.sqlite"), None),
            "symlink": (str(tmp_path / "link.sqlite"), None),
            "relative path": ("data/../data/db.sqlite", None),
        }
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        if can_bind_mount(tmp_path):
            spellings["bind mount"] = (str(mnt / "db.sqlite"), f"mount --bind {shlex.quote(str(data))} {mnt}")
        for what, (path, mount) in spellings.items():
            r = second(path, tmp_path, mount)
            assert r.returncode == 2, (what, r.stdout, r.stderr)
            assert f"another ingestd serve (pid {d.proc.pid}) is already running" in r.stderr, (what, r.stderr)
        assert d.proc.poll() is None
        if "bind mount" not in spellings:
            pytest.skip("bind mount not possible here (needs unshare -m and mount); the other spellings passed")
    finally:
        assert d.stop() == 0, d.log.read_text()[-3000:]
