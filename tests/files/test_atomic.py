"""``ingestd.files``: the one way ingestd rewrites a whole file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ingestd import files


def test_replace_writes_exactly_the_mode_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("old")
    path.chmod(0o644)
    old_umask = os.umask(0o077)
    try:
        files.replace(path, b"new", 0o640)
    finally:
        os.umask(old_umask)
    assert path.read_bytes() == b"new" and stat.S_IMODE(path.stat().st_mode) == 0o640
    files.replace(path, "again", 0o600)
    assert path.read_text() == "again" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_replace_survives_a_leftover_temporary_and_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("kept")
    (tmp_path / f".f.tmp{os.getpid()}").write_text("half")  # left by a crash of a process with our pid
    files.replace(path, "whole", 0o600)
    assert path.read_text() == "whole"
    with pytest.raises(OSError):
        files.replace(tmp_path / "missing-dir" / "f", "x", 0o600)
    # a write failing once the temporary exists (here: text that cannot be encoded) leaves the old
    # file as it was and no temporary behind
    with pytest.raises(UnicodeEncodeError):
        files.replace(path, "\ud800", 0o600)
    assert path.read_text() == "whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_write_new_never_follows_a_planted_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("mine")
    (tmp_path / "link").symlink_to(victim)
    with pytest.raises(FileExistsError):
        files.write_new(tmp_path / "link", "evil", 0o600)
    assert victim.read_text() == "mine"
