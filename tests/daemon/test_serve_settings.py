"""``ingestd serve`` reads every tunable from the one settings table, resolved once:
flag → ``INGESTD_*`` environment → config file → default."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.daemon import main as daemon_main
from ingestd.daemon.config import ServeConfig
from tests.support import free_port


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[ServeConfig]:
    """What ``ingestd serve`` would run the daemon with (the lock and the port are really taken)."""
    got: list[ServeConfig] = []

    def fake_run(cfg: ServeConfig, *, held: Any, sock: socket.socket, log_level: str) -> None:
        got.append(cfg)
        assert log_level == cfg.settings.get_str("log_level")
        sock.close()
        held.release()

    monkeypatch.setattr(daemon_main, "run", fake_run)
    return got


def _serve(tmp_path: Path, *args: str) -> Any:
    res = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "d.db"), "--projects", str(tmp_path), *args])
    return res


def test_a_config_file_may_hold_serves_settings(
    tmp_path: Path, started: list[ServeConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('port = 0\nmax_body_bytes = 4096\nhook_timeout_ms = 900\nlog_level = "warning"\n')
    monkeypatch.setenv("INGESTD_CONFIG", str(config))
    res = _serve(tmp_path)
    assert res.exit_code == 0, res.output
    cfg = started[0]
    assert (cfg.port, cfg.hooks.max_body_bytes, cfg.hooks.hook_timeout_ms) == (0, 4096, 900)
    assert cfg.settings.get_str("log_level") == "warning"


def test_flag_beats_environment_beats_config_file_beats_default(
    tmp_path: Path, started: list[ServeConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "port = 0\nmax_body_bytes = 4096\nwatchdog_window_s = 120\ntail = false\nheader_timeout_ms = 3000\n"
    )
    monkeypatch.setenv("INGESTD_CONFIG", str(config))
    monkeypatch.setenv("INGESTD_MAX_BODY_BYTES", "8192")
    monkeypatch.setenv("INGESTD_WATCHDOG_WINDOW_S", "90")
    res = _serve(tmp_path, "--watchdog-window-s", "45.5")
    assert res.exit_code == 0, res.output
    cfg = started[0]
    assert cfg.port == 0  # config file (0: any free port)
    assert cfg.hooks.max_body_bytes == 8192  # environment over the file
    assert cfg.watchdog_window_s == 45.5  # flag over the environment
    assert cfg.tail is False and cfg.conns.header_timeout_s == 3.0  # file
    assert cfg.hooks.hook_timeout_ms == 2000 and cfg.host == "127.0.0.1"  # defaults
    assert cfg.settings.sources["port"] == "config" and cfg.settings.sources["watchdog_window_s"] == "argument"


def test_the_port_flag_and_its_environment_variable_still_work(
    tmp_path: Path, started: list[ServeConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INGESTD_PORT", "0")
    assert _serve(tmp_path, "--no-tail").exit_code == 0
    assert started[-1].port == 0 and started[-1].tail is False
    free = free_port()
    assert _serve(tmp_path, "--port", str(free)).exit_code == 0
    assert started[-1].port == free


def test_an_unknown_key_or_a_bad_value_is_a_clear_error(
    tmp_path: Path, started: list[ServeConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    monkeypatch.setenv("INGESTD_CONFIG", str(config))
    config.write_text("prot = 9000\n")
    res = _serve(tmp_path)
    assert res.exit_code == 2 and "unknown setting(s) in the config file: prot" in res.output
    config.write_text("port = 70000\n")
    res = _serve(tmp_path)
    assert res.exit_code == 2 and "setting port from config file: 70000 is not a valid int (0 to 65,535)" in res.output
    config.write_text("")
    res = _serve(tmp_path, "--port", "70000")
    assert res.exit_code == 2 and "70000 is not in the range 0<=x<=65535" in res.output
    assert not started


def test_a_log_level_logging_does_not_know_is_a_clear_error_before_anything_starts(
    tmp_path: Path, started: list[ServeConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: accepted, then a KeyError traceback (exit 1) from the logging setup once the daemon ran
    config = tmp_path / "config.toml"
    monkeypatch.setenv("INGESTD_CONFIG", str(config))
    config.write_text('log_level = "verbose"\n')
    res = _serve(tmp_path)
    assert res.exit_code == 2, res.output
    assert "setting log_level from config file: 'verbose' is not a valid str (one of debug, info" in res.output
    config.write_text("")
    monkeypatch.setenv("INGESTD_LOG_LEVEL", "loud")
    assert "setting log_level from INGESTD_LOG_LEVEL: 'loud'" in _serve(tmp_path).output
    monkeypatch.delenv("INGESTD_LOG_LEVEL")
    res = _serve(tmp_path, "--log-level", "verbose")
    assert res.exit_code == 2 and "'verbose' is not one of" in res.output
    assert not started
    config.write_text('log_level = "WARNING"\n')
    assert _serve(tmp_path, "--port", "0").exit_code == 0
    assert started[0].settings.get_str("log_level") == "warning"
