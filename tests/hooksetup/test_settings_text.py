"""``hooks install`` changes only what it was asked to: numbers keep their text (``1e400`` never
becomes ``Infinity``), text ``json.loads`` reads but a rewrite would change (a key twice, ``NaN``, a
lone surrogate escape) is refused by name, a read-only file is refused without ``--force``, and a
change another program makes between our read and our rename is never overwritten."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd import files
from ingestd.cli import cli


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / ".claude").mkdir(parents=True)
    return h


def run(home: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["hooks", *args], env={"HOME": str(home)})


def _strict(text: str) -> Any:
    def no(name: str) -> Any:
        raise AssertionError(f"{name} written: not JSON")

    return json.loads(text, parse_constant=no)


def test_a_rewrite_keeps_every_numbers_text(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    assert run(home, "install", "--port", "7001").exit_code == 0
    doc = path.read_text()
    path.write_text(
        doc.replace("{", '{"big": 1e400, "price": 1.50, "neg": -0, "e": 2E3, "n": 12345678901234567890,', 1)
    )
    r = run(home, "install", "--port", "7002")  # our older hooks replaced: the whole file is rendered
    assert r.exit_code == 0, r.output
    text = path.read_text()
    for num in ('"big": 1e400', '"price": 1.50', '"neg": -0', '"e": 2E3', '"n": 12345678901234567890'):
        assert num in text
    assert "Infinity" not in text and "7002" in text
    _strict(text)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"model": "a", "env": {"X": "1"}, "model": "b"}', 'the key "model" appears twice in one object'),
        ('{"hooks": {}, "cleanupPeriodDays": NaN}', "NaN is not JSON"),
        ('{"x": -Infinity}', "-Infinity is not JSON"),
        ('{"statusLine": {"command": "echo \\ud800"}}', "holds a lone surrogate escape"),
        ('{"\\udfff": 1}', "holds a lone surrogate escape"),
    ],
)
@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_text_a_rewrite_would_change_is_refused_by_name(home: Path, text: str, said: str, action: str) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text(text)
    r = run(home, action)
    assert r.exit_code == 2 and said in r.output and "nothing was changed" in r.output, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert path.read_text() == text and not list(path.parent.glob("settings.json.bak-*"))


def test_a_read_only_settings_file_is_refused_unless_forced(home: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text('{"model": "opus"}\n')
    os.chmod(path, 0o444)
    r = run(home, "install")
    assert r.exit_code == 2 and "is read-only (mode 0444)" in r.output and "--force" in r.output, r.output
    assert path.read_text() == '{"model": "opus"}\n'
    r = run(home, "install", "--force")
    assert r.exit_code == 0, r.output
    assert "hooks" in json.loads(path.read_text()) and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_a_change_made_between_our_read_and_our_rename_is_kept(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text('{"model": "opus"}\n')
    theirs = '{"model": "sonnet", "env": {"A": "1"}}\n'
    real = files.write_new

    def and_another_program_writes(p: Path, data: bytes | str, mode: int) -> None:
        real(p, data, mode)
        if p.name.startswith(".settings.json.tmp"):  # our new file is ready: Claude Code writes its own now
            path.write_text(theirs)

    monkeypatch.setattr(files, "write_new", and_another_program_writes)
    r = run(home, "install")
    assert r.exit_code == 2 and "changed while ingestd edited it" in r.output, r.output
    assert path.read_text() == theirs
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]  # no backup, no temporary left
