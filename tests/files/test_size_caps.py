"""A file the user names is read whole only up to a cap: a larger one (``/dev/zero``, the wrong file)
is a one-line error, exit 2, never a ``MemoryError`` traceback (``ingestd.files``).

Regression: ``( ulimit -v 2000000; ingestd pricing load /dev/zero )`` ended in a MemoryError traceback.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd import files
from ingestd.claude import hooksetup
from ingestd.cli import cli
from ingestd.errors import ConfigError, InputError
from ingestd.http import auth
from ingestd.settings import load_config_file


def test_pricing_load_of_dev_zero_is_one_line_exit_2_under_a_memory_limit(tmp_path: Path) -> None:
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2_000_000_000, 2_000_000_000))\n"
        "from ingestd.cli import main\n"
        f"sys.argv = ['ingestd', 'pricing', 'load', '/dev/zero', '--db', {str(tmp_path / 'x.db')!r}]\n"
        "main()\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr == (
        "ingestd: /dev/zero is a character device, not a regular file: name the price file itself; nothing was read\n"
    )
    assert not (tmp_path / "x.db").exists()


def test_read_capped_reads_up_to_the_cap_and_refuses_past_it(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x" * 10)
    assert files.read_capped(f, 10, "thing") == b"x" * 10
    with pytest.raises(ConfigError, match=r"f: the thing is larger than 9 bytes"):
        files.read_capped(f, 9, "thing")
    with pytest.raises(InputError):
        files.read_capped(f, 9, "thing", InputError)


def private(path: Path, size: int, fill: bytes = b" ") -> Path:
    path.write_bytes(fill * size)
    os.chmod(path, 0o600)
    return path


def test_the_config_file_is_capped(tmp_path: Path) -> None:
    big = private(tmp_path / "c.toml", (1 << 20) + 1)
    with pytest.raises(ConfigError, match="the config file is larger than 1 MiB"):
        load_config_file(big)


def test_the_token_file_is_capped(tmp_path: Path) -> None:
    big = private(tmp_path / "tok", (64 << 10) + 1, b"t")
    with pytest.raises(ConfigError, match="the token file is larger than 65536 bytes"):
        auth.load_token(env_name=None, file=big, env={})


def test_claude_settings_json_is_capped(tmp_path: Path) -> None:
    big = private(tmp_path / "settings.json", (16 << 20) + 1)
    with pytest.raises(InputError, match="the settings file is larger than 16 MiB"):
        hooksetup.read_text(big)
    (tmp_path / "proj" / ".claude").mkdir(parents=True)
    big.rename(tmp_path / "proj" / ".claude" / "settings.json")
    r = CliRunner().invoke(cli, ["hooks", "install", "--project", str(tmp_path / "proj"), "--dry-run"])
    assert r.exit_code == 2 and "the settings file is larger than 16 MiB" in r.output, r.output


def test_read_bounded_keeps_length_hash_head_and_tail_of_a_larger_file(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"h" * 10 + b"m" * (3 << 20) + b"t" * 10)
    assert files.read_bounded(f, 1 << 30, "thing") == f.read_bytes()
    got = files.read_bounded(f, 100, "thing", head_bytes=10, tail_bytes=10)
    assert got == files.TooLarge(
        (3 << 20) + 20, hashlib.blake2b(f.read_bytes(), digest_size=8).hexdigest(), b"h" * 10, b"t" * 10
    )


def test_a_small_file_of_ingestd_past_its_cap_is_no_state(tmp_path: Path) -> None:
    f = private(tmp_path / "s", 101)
    assert files.read_small(f, 101, "state file") == b" " * 101
    assert files.read_small(f, 100, "state file") is None
    assert files.read_small(tmp_path / "missing", 100, "state file") is None
