"""Settings are read strictly: ASCII digits for numbers, a named config file must exist, ``null`` is
never an allowed origin (regressions from a fresh-eyes test of the CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.errors import ConfigError
from ingestd.settings import load, number_text, resolve


@pytest.mark.parametrize("raw", ["１７４００", "17_400", "١٧٤٠٠", "+17400", "-1", "0x10", "17400.0", "", " "])
def test_an_int_setting_takes_ascii_digits_only(raw: str) -> None:
    # int() took the first three as 17400
    with pytest.raises(ConfigError, match="INGESTD_PORT"):
        resolve({}, {"INGESTD_PORT": raw}, {})


def test_plain_ints_and_floats_still_resolve() -> None:
    got = resolve({}, {"INGESTD_PORT": " 17400\n", "INGESTD_WATCHDOG_WINDOW_S": "2.5e2"}, {})
    assert got.get_int("port") == 17400
    assert got.values["watchdog_window_s"] == 250.0
    with pytest.raises(ConfigError):
        resolve({}, {"INGESTD_WATCHDOG_WINDOW_S": "２.５"}, {})
    with pytest.raises(ConfigError):
        resolve({}, {"INGESTD_WATCHDOG_WINDOW_S": "1_0"}, {})


def test_a_sign_only_where_negatives_make_sense() -> None:
    assert number_text("-3", signed=True) == -3
    assert number_text("+3", signed=True) == 3
    with pytest.raises(ValueError):
        number_text("+3")


@pytest.mark.parametrize("flag", [["hooks", "print", "--port", "１７４００"], ["sessions", "--limit", "1_0"]])
def test_int_flags_take_ascii_digits_only(flag: list[str]) -> None:
    r = CliRunner().invoke(cli, flag)
    assert r.exit_code == 2 and "ASCII digits" in r.output, r.output


def test_a_named_config_file_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent.toml"
    with pytest.raises(ConfigError, match=f"config file {missing} \\(named by INGESTD_CONFIG\\) does not exist"):
        load({}, {"INGESTD_CONFIG": str(missing)})
    r = CliRunner().invoke(cli, ["hooks", "print"], env={"INGESTD_CONFIG": str(missing)})
    assert r.exit_code == 2 and str(missing) in r.output
    # the default file is optional: not named, not there, the defaults
    assert load({}, {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}).get_int("port") == 7391


@pytest.mark.parametrize("raw", ["null", "NULL", " null ", "http://a:1, null"])
def test_null_is_refused_as_an_allowed_origin_alone_or_in_a_list(raw: str) -> None:
    with pytest.raises(ConfigError, match="'null' cannot be allowed"):
        resolve({}, {"INGESTD_ALLOWED_ORIGINS": raw}, {})
    with pytest.raises(ConfigError, match="'null' cannot be allowed"):
        resolve({}, {}, {"allowed_origins": raw})


def test_none_still_unsets_allowed_origins() -> None:
    assert resolve({}, {"INGESTD_ALLOWED_ORIGINS": "none"}, {}).values["allowed_origins"] is None
    assert resolve({}, {"INGESTD_SHIP_TO": "null"}, {}).values["ship_to"] is None


@pytest.fixture
def report_db(tmp_path: Path) -> Path:
    (tmp_path / "p").mkdir()
    db = tmp_path / "x.db"
    r = CliRunner().invoke(
        cli, ["ingest", "--projects", str(tmp_path / "p"), "--db", str(db)], env={"INGESTD_CONFIG": None}
    )
    assert r.exit_code == 0, r.output
    return db


@pytest.mark.parametrize("cmd", [["cost"], ["sessions"], ["tree", "x"], ["pricing", "list"], ["verify"]])
@pytest.mark.parametrize("problem", ["missing", "unknown_key"])
def test_every_command_refuses_the_settings_serve_refuses(
    tmp_path: Path, report_db: Path, cmd: list[str], problem: str
) -> None:
    # Regression: read commands ignored a missing INGESTD_CONFIG file and unknown keys
    conf = tmp_path / "c.toml"
    if problem == "unknown_key":
        conf.write_text("bogus = 1\n")
        conf.chmod(0o600)
    r = CliRunner().invoke(cli, [*cmd, "--db", str(report_db)], env={"INGESTD_CONFIG": str(conf)})
    assert r.exit_code == 2, r.output
    want = "unknown setting(s) in the config file: bogus" if problem == "unknown_key" else "does not exist"
    assert want in r.output
    named = cmd[:1] if cmd[0] == "tree" else cmd
    help_ = CliRunner().invoke(cli, [*named, "--help"], env={"INGESTD_CONFIG": str(conf)})
    assert help_.exit_code == 0, help_.output  # --help still works


def test_status_warns_of_the_settings_and_runs(tmp_path: Path, report_db: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text("bogus = 1\n")
    conf.chmod(0o600)
    r = CliRunner().invoke(cli, ["status", "--db", str(report_db), "--no-stat"], env={"INGESTD_CONFIG": str(conf)})
    assert r.exit_code == 0, r.output
    assert "ingestd: warning: unknown setting(s) in the config file: bogus" in r.stderr
