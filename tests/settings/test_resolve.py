"""The settings resolver: argument → INGESTD_* env → config file → default."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ingestd.errors import ConfigError
from ingestd.settings import SETTINGS, default_config_path, load_config_file, resolve


def test_defaults_are_the_spec_policy() -> None:
    s = resolve({}, {}, {})
    assert s.get_int("retention_events_days") == 90
    assert s.get_opt_int("retention_token_usage_days") is None
    assert s.get_int("backup_retention_days") == 30
    assert s.get_int("backup_keep_newest") == 7
    assert s.get_bool("schedule_enabled") is True
    assert set(s.sources.values()) == {"default"}


def test_precedence_argument_env_config_default() -> None:
    name = "retention_events_days"
    assert resolve({name: 5}, {"INGESTD_RETENTION_EVENTS_DAYS": "6"}, {name: 7}).get_int(name) == 5
    assert resolve({name: None}, {"INGESTD_RETENTION_EVENTS_DAYS": "6"}, {name: 7}).get_int(name) == 6
    r = resolve({}, {}, {name: 7})
    assert r.get_int(name) == 7 and r.sources[name] == "config"


def test_off_switch_and_none_spellings() -> None:
    s = resolve({}, {"INGESTD_SCHEDULE_ENABLED": "off", "INGESTD_RETENTION_TOKEN_USAGE_DAYS": "never"}, {})
    assert s.get_bool("schedule_enabled") is False
    assert s.get_opt_int("retention_token_usage_days") is None


@pytest.mark.parametrize(
    ("env", "config"),
    [
        ({"INGESTD_BACKUP_KEEP_NEWEST": "seven"}, {}),
        ({"INGESTD_SCHEDULE_ENABLED": "maybe"}, {}),
        ({}, {"retention_events_days": -1}),
        # past timedelta's range: a config error, not an OverflowError in prune (fresh-eyes pass)
        ({"INGESTD_RETENTION_EVENTS_DAYS": "99999999999"}, {}),
        ({}, {"max_line_bytes": 10**12}),
        ({}, {"no_such_setting": 1}),
        # a log level logging does not know (a regression: a KeyError traceback once serve configured logging)
        ({"INGESTD_LOG_LEVEL": "verbose"}, {}),
        ({}, {"log_level": "trace"}),
        # 0 rows per batch: accepted here, then every scheduled prune / shipping pass of the daemon failed
        ({}, {"prune_batch_rows": 0}),
        ({"INGESTD_SHIP_BATCH_ROWS": "0"}, {}),
    ],
)
def test_bad_values_are_config_errors(env: dict[str, str], config: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        resolve({}, env, config)


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("budget_daily_soft_usd", "20"),
        ("port", "9000"),
        ("tail", "false"),
        ("schedule_enabled", "yes"),
        ("retention_events_days", " 30"),
    ],
)
def test_a_number_or_a_yes_no_written_as_a_string_in_the_config_file_is_the_wrong_kind(name: str, raw: str) -> None:
    """TOML has numbers and booleans; in the environment every value is text, so there it is read."""
    with pytest.raises(ConfigError, match=f"setting {name} from config file: .* is a string; write it as") as e:
        resolve({}, {}, {name: raw})
    assert "without quotes" in e.value.message or "true or false" in e.value.message
    assert resolve({}, {f"INGESTD_{name.upper()}": raw.strip()}, {}).values[name] is not None
    assert resolve({}, {}, {"budget_daily_hard_usd": "none"}).values["budget_daily_hard_usd"] is None


def test_config_file_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "config.toml"
    p.write_text("backup_keep_newest = 3\nschedule_enabled = false\n")
    s = resolve({}, {}, load_config_file(p))
    assert s.get_int("backup_keep_newest") == 3 and s.get_bool("schedule_enabled") is False
    assert load_config_file(tmp_path / "missing.toml") == {}
    assert default_config_path({"INGESTD_CONFIG": str(p)}) == p
    assert default_config_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/ingestd/config.toml")


def test_a_config_file_gone_before_it_is_read_is_missing_like_one_never_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: two missing-file errors, the one after the check without the way out (unset INGESTD_CONFIG)
    import ingestd.settings

    p = tmp_path / "config.toml"
    with pytest.raises(ConfigError) as never:
        load_config_file(p, required=True)
    p.write_text("port = 1\n")

    def removed_meanwhile(path: Path, *_: object) -> bytes:
        path.unlink()
        raise FileNotFoundError(2, "No such file or directory", str(path))

    monkeypatch.setattr(ingestd.settings, "read_capped", removed_meanwhile)
    with pytest.raises(ConfigError) as gone:
        load_config_file(p, required=True)
    assert gone.value.message == never.value.message
    assert "unset INGESTD_CONFIG" in gone.value.message
    p.write_text("port = 1\n")
    assert load_config_file(p) == {}


# The unit a number setting's name ends with (``ingestd.settings``' docstring), the word its help
# uses for it, and the range a default in that unit stays within (outside it, the value was likely
# written in another unit: 10 for a ``_ms`` one meant seconds).
UNITS = {
    "_days": (r"\bdays?\b", 1, 3_650),
    "_s": (r"\bseconds?\b", 1, 7 * 86_400),
    "_ms": (r"\bms\b|\bmilliseconds?\b", 100, 3_600_000),
    "_bytes": (r"\bbytes?\b", 1_024, 1 << 40),
    "_rows": (r"\brows?\b", 1, 10_000_000),
    "_usd": (r"\busd\b", 0, 1_000_000),
    "_pct": (r"\bpercent\b", 0, 100),
}
# Number settings with no unit: what they count.
COUNTS = {
    "backup_keep_newest": "backups",
    "max_connections": "open connections",
    "port": "a TCP port number",
    "otlp_port": "a TCP port number",
}
TIME_UNITS = ("_days", "_s", "_ms")


def _unit(name: str) -> str | None:
    return next((u for u in UNITS if name.endswith(u)), None)


def test_every_number_setting_names_its_unit_and_its_help_no_other() -> None:
    for s in SETTINGS:
        assert s.help and s.name == s.name.lower(), s.name
        unit = _unit(s.name)
        if s.kind not in ("int", "float"):
            assert unit is None, f"{s.name}: a {s.kind} setting named like a quantity in {unit}"
            continue
        if unit is None:
            assert s.name in COUNTS, f"{s.name}: a number setting without its unit ({', '.join(UNITS)}) in its name"
            continue
        _, low, high = UNITS[unit]
        assert s.default is None or low <= s.default <= high, f"{s.name}: default {s.default} is not a {unit}"
        for other in TIME_UNITS:  # a duration's help names no other time unit
            if unit in TIME_UNITS and other != unit:
                assert not re.search(UNITS[other][0], s.help.lower()), f"{s.name}: its help speaks of {other[1:]}"


def test_float_settings_and_bounds() -> None:
    s = resolve({}, {"INGESTD_WATCHDOG_WINDOW_S": "90.5"}, {"rescan_interval_s": 2})
    assert s.get_float("watchdog_window_s") == 90.5 and s.get_float("rescan_interval_s") == 2.0
    for env in ({"INGESTD_WATCHDOG_WINDOW_S": "0.5"}, {"INGESTD_WATCHDOG_WINDOW_S": "nan"}, {"INGESTD_PORT": "65536"}):
        with pytest.raises(ConfigError, match="is not a valid"):
            resolve({}, env, {})
    with pytest.raises(ConfigError, match=r"setting port from config file: True is not a valid int \(0 to 65,535\)"):
        resolve({}, {}, {"port": True})


def test_a_config_file_others_can_change_is_refused(tmp_path: Path) -> None:
    # Regression: read as any other: whoever could write it could set ship_to (the log shipped to their
    # server), allowed_origins (their web page may post hooks) or host
    p = tmp_path / "config.toml"
    p.write_text('ship_to = "postgresql://evil.example/x"\n')
    p.chmod(0o666)
    with pytest.raises(ConfigError, match=r"config.toml: mode 0666: writable by group and others; fix: chmod 600"):
        load_config_file(p)
    p.chmod(0o644)
    assert load_config_file(p) == {"ship_to": "postgresql://evil.example/x"}
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "config.toml").write_text("port = 9000\n")
    shared.chmod(0o777)
    with pytest.raises(ConfigError, match="directory mode 0777"):
        load_config_file(shared / "config.toml")
    assert load_config_file(shared / "missing.toml") == {}


def test_the_readme_names_every_setting() -> None:
    # Regression: `retention_*`, `backup_*`, `schedule_*`, "see `ingestd prune --help`", whose help names
    # none of backup_keep_newest, schedule_enabled, ...: those settings were nowhere to be found
    readme = (Path(__file__).resolve().parents[2] / "docs" / "reference.md").read_text()
    section = readme[readme.index("## Settings") : readme.index("## Reading the data")]
    assert [s.name for s in SETTINGS if f"`{s.name}`" not in section] == []


def test_a_relative_backup_dir_setting_is_the_databases_not_the_working_directorys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: relative to the working directory, so the daemon (started by the service in /) backed up
    # to /bk while `ingestd backup` and `prune`'s retention used ./bk wherever they were run
    from ingestd.daemon.config import ServeConfig
    from ingestd.retention.backup import backup_dir_from

    db = tmp_path / "data" / "i.db"
    monkeypatch.chdir(tmp_path)
    for s in (resolve({}, {}, {"backup_dir": "bk"}), resolve({}, {"INGESTD_BACKUP_DIR": "bk"}, {})):
        assert backup_dir_from(s, db) == tmp_path / "data" / "bk"
        assert ServeConfig.from_settings(s, db_path=db, projects=(), token=None).backup_dir == tmp_path / "data" / "bk"
    assert backup_dir_from(resolve({"backup_dir": "bk"}, {}, {}), db) == Path("bk")  # --dir bk: the shell's
    home = resolve({}, {"INGESTD_BACKUP_DIR": "~/bk"}, {})
    assert ServeConfig.from_settings(home, db_path=db, projects=(), token=None).backup_dir == Path("~/bk").expanduser()


def test_a_config_file_owned_by_root_or_the_user_is_read_one_owned_by_another_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "config.toml"
    p.write_text("port = 9000\n")
    # a file owned by a user (not root) other than the one running ingestd
    if os.geteuid() == 0:
        os.chown(p, 4242, -1)
    else:
        theirs = p.stat().st_uid + 4242
        monkeypatch.setattr(os, "geteuid", lambda: theirs)
    with pytest.raises(ConfigError, match=r"config.toml: owned by .*, not by .*; fix: chown"):
        load_config_file(p)
    # a root-owned file (here /etc/passwd, 0644 in a 0755 /etc) passes the ownership check: it is then read
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_config_file(Path("/etc/passwd"))
