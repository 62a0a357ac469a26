"""``hooks install`` and ``uninstall`` keep a settings file's line endings (docs/reference.md: byte for byte).

Regression: a CRLF ``settings.json`` came back from install + uninstall with LF endings (the file
was read in universal-newline mode), and ``--dry-run`` showed its unchanged lines as unchanged
though every one of them was about to lose its CR.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.claude import hooksetup
from ingestd.cli import cli
from tests.hooksetup.test_hooksetup import USER_SETTINGS


def run(home: Path, *args: str) -> str:
    r = CliRunner().invoke(cli, ["hooks", *args], env={"HOME": str(home)}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout_bytes.decode()  # ``stdout`` turns CRLF into LF


@pytest.mark.parametrize("layout", ["indented", "with user hooks"])
def test_a_crlf_file_round_trips_byte_for_byte_and_added_lines_are_crlf(tmp_path: Path, layout: str) -> None:
    doc = {"model": "x", "permissions": {"allow": []}} if layout == "indented" else USER_SETTINGS
    original = (json.dumps(doc, indent=2) + "\n").replace("\n", "\r\n").encode()
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(original)

    diff = run(tmp_path, "install", "--dry-run")
    assert diff.startswith("---")
    body = [x for x in diff.splitlines(keepends=True) if x[:1] in " +-" and not x.startswith(("---", "+++"))]
    assert body and any(x.startswith("+") for x in body)
    for line in body:
        assert line.endswith("\r\n"), repr(line)  # kept and added lines alike, as they will be written
    assert path.read_bytes() == original

    run(tmp_path, "install")
    installed = path.read_bytes()
    assert installed.count(b"\n") == installed.count(b"\r\n") > original.count(b"\n")
    assert json.loads(installed)["model"] == doc["model"]
    run(tmp_path, "uninstall")
    assert path.read_bytes() == original


def test_uses_crlf_only_when_every_line_does() -> None:
    assert hooksetup.uses_crlf('{\r\n  "a": 1\r\n}\r\n')
    assert not hooksetup.uses_crlf('{\r\n  "a": 1\n}\r\n')  # mixed: edited as it is
    assert not hooksetup.uses_crlf('{"a": 1}')
    assert not hooksetup.uses_crlf(None)


def test_a_mixed_file_keeps_its_bytes_through_install_and_uninstall(tmp_path: Path) -> None:
    original = b'{\r\n  "model": "x",\n  "permissions": {}\r\n}\n'
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(original)
    run(tmp_path, "install")
    run(tmp_path, "uninstall")
    assert path.read_bytes() == original
