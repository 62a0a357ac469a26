"""The config file is read once per command: ``ingestd.cli`` checks it before the command runs and
the command resolves its settings from that reading (it used to read and check the file twice)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd import settings
from ingestd.cli import cli


@pytest.mark.parametrize("argv", [["hooks", "print"], ["backup"]], ids=["hooks", "backup"])
def test_the_config_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text("port = 9123\n")
    config.chmod(0o600)
    monkeypatch.setenv("INGESTD_CONFIG", str(config))
    monkeypatch.setenv("INGESTD_DB", str(tmp_path / "x.db"))
    reads: list[Path] = []
    real = settings.load_config_file

    def counted(path: Path, **kwargs: Any) -> dict[str, object]:
        reads.append(path)
        return real(path, **kwargs)

    monkeypatch.setattr(settings, "load_config_file", counted)
    r = CliRunner().invoke(cli, argv, env={"HOME": str(tmp_path)})
    assert reads == [config], r.output
    if argv[0] == "hooks":  # and the command did use that reading
        assert r.exit_code == 0 and "127.0.0.1:9123/hooks" in r.stdout
