"""``ingestd service``: the unit and agent files, validated, and the install/uninstall round trip."""

from __future__ import annotations

import os
import plistlib
import shutil
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.claude import service
from ingestd.cli import cli


def _executable(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _spec(tmp_path: Path, platform: str) -> service.ServiceSpec:
    exe = _executable(tmp_path / "tool dir" / "ingestd")  # a space: ExecStart must quote it
    argv = service.serve_argv([str(exe)], tmp_path / "data 100%" / "i.db", [tmp_path / "projects"], 7400)
    return service.ServiceSpec(argv=argv, log_file=tmp_path / "i.log", platform=platform)


def test_systemd_unit_restarts_on_failure_logs_to_the_journal_and_quotes_paths(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "linux")
    text = service.render_systemd(spec)
    lines = text.splitlines()
    exec_start = next(x for x in lines if x.startswith("ExecStart="))
    assert exec_start == (
        f'ExecStart="{tmp_path}/tool dir/ingestd" serve --db "{tmp_path}/data 100%%/i.db"'
        f" --projects {tmp_path}/projects --port 7400"
    )
    for want in ("Restart=on-failure", "StandardOutput=journal", "StandardError=journal", "WantedBy=default.target"):
        assert want in lines


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed (.ci/run installs it)"
)
def test_systemd_analyze_verify_accepts_the_unit_and_refuses_a_broken_one(tmp_path: Path) -> None:
    unit = tmp_path / "units" / service.UNIT_NAME
    unit.parent.mkdir()
    unit.write_text(service.render_systemd(_spec(tmp_path, "linux")))
    ok = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    # The check is real: a command that is not there is refused.
    gone = service.ServiceSpec([str(tmp_path / "nowhere" / "ingestd"), "serve"], tmp_path / "l", "linux")
    unit.write_text(service.render_systemd(gone))
    bad = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False)
    assert bad.returncode != 0 and "nowhere" in bad.stderr


def test_launchd_agent_is_a_valid_plist_that_restarts_on_failure(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "darwin")
    doc = plistlib.loads(service.render_launchd(spec).encode())
    assert doc["Label"] == service.AGENT_LABEL
    assert doc["ProgramArguments"] == spec.argv and doc["ProgramArguments"][1] == "serve"
    assert doc["KeepAlive"] == {"SuccessfulExit": False} and doc["RunAtLoad"] is True
    assert doc["StandardErrorPath"] == doc["StandardOutPath"] == str(tmp_path / "i.log")
    if shutil.which("plutil"):
        path = tmp_path / "a.plist"
        path.write_text(service.render_launchd(spec))
        assert subprocess.run(["plutil", "-lint", str(path)], check=False).returncode == 0


def test_launchd_round_trip_runs_bootstrap_and_bootout(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def run(argv: Sequence[str]) -> tuple[int, str]:
        calls.append(list(argv))
        return 0, ""

    spec = _spec(tmp_path, "darwin")
    path = service.service_file("darwin", {"HOME": str(tmp_path / "home")})
    service.install(spec, path, start=True, run=run)
    assert path.exists() and calls == [["launchctl", "bootstrap", f"gui/{os.getuid()}", str(path)]]
    service.uninstall("darwin", path, stop=True, run=run)
    assert not path.exists() and calls[-1] == ["launchctl", "bootout", f"gui/{os.getuid()}/{service.AGENT_LABEL}"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the CLI round trip drives systemctl (Linux)")
def test_cli_install_uninstall_round_trip_in_a_temporary_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    log = tmp_path / "systemctl.log"
    _executable(bin_dir / "systemctl", f'#!/bin/sh\necho "$@" >> {log}\n')
    tool = _executable(tmp_path / "pipx" / "venvs" / "ingestd" / "bin" / "ingestd", f"#!{sys.executable}\n")
    (bin_dir / "ingestd").symlink_to(tool)
    env = {"HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin", "XDG_CONFIG_HOME": "", "XDG_DATA_HOME": ""}
    runner = CliRunner()

    dry = runner.invoke(cli, ["service", "install", "--dry-run"], env=env, catch_exceptions=False)
    unit = home / ".config" / "systemd" / "user" / service.UNIT_NAME
    assert dry.exit_code == 0 and not unit.exists() and not log.exists()
    assert f"ExecStart={bin_dir}/ingestd serve --db {home}/.local/share/ingestd/ingestd.db" in dry.output

    res = runner.invoke(cli, ["service", "install"], env=env, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert f"runs the ingestd on PATH ({bin_dir}/ingestd)" in res.output
    assert unit.read_text() == dry.output.split("\n", 1)[1]
    assert log.read_text().splitlines() == ["--user daemon-reload", f"--user enable --now {service.UNIT_NAME}"]

    res = runner.invoke(cli, ["service", "uninstall"], env=env, catch_exceptions=False)
    assert res.exit_code == 0 and not unit.exists() and f"{unit}: removed" in res.output
    assert log.read_text().splitlines()[2:] == [
        f"--user disable --now {service.UNIT_NAME}",
        "--user daemon-reload",
    ]
    again = runner.invoke(cli, ["service", "uninstall"], env=env, catch_exceptions=False)
    assert "not installed, nothing to do" in again.output


def test_a_failing_service_manager_is_a_clear_error_and_leaves_nothing_behind(tmp_path: Path) -> None:
    def run(argv: Sequence[str]) -> tuple[int, str]:
        return (1, "Failed to connect to bus: No medium found") if "enable" in argv else (0, "")

    path = tmp_path / "u" / service.UNIT_NAME
    with pytest.raises(service.ConfigError, match="Failed to connect to bus") as e:
        service.install(_spec(tmp_path, "linux"), path, start=True, run=run)
    assert not path.exists(), "the unit it wrote is removed again"
    assert "no systemd user session" in e.value.message and "ingestd serve" in e.value.message
    assert "wsl.conf" in e.value.message
    path.write_text("the unit of an earlier install\n")
    with pytest.raises(service.ConfigError):
        service.install(_spec(tmp_path, "linux"), path, start=True, run=run)
    assert path.read_text() == "the unit of an earlier install\n", "a replaced unit is put back"


def test_service_status_explains_a_missing_user_bus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if service.current_platform() != "linux":
        pytest.skip("systemd user units are Linux's")
    home = tmp_path / "home"
    unit = service.service_file("linux", {"HOME": str(home)})
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\n")
    monkeypatch.setattr(service, "manager_status", lambda plat, path: (1, "Failed to connect to bus: No medium found"))
    r = CliRunner().invoke(
        cli, ["service", "status", "--db", str(tmp_path / "x.db")], env={"HOME": str(home), "XDG_CONFIG_HOME": ""}
    )
    assert "service manager: no systemd user session is reachable" in r.output, r.output
    assert "Failed to connect" not in r.output


def test_the_service_resolves_its_settings_as_the_installing_shell_does(tmp_path: Path) -> None:
    # Regression: the unit carried none of INGESTD_CONFIG, XDG_CONFIG_HOME or INGESTD_PORT: a daemon started
    # by the service read another config file (or none) and listened elsewhere than `ingestd serve`
    # in that shell, and than `hooks install` (which reads the settings) sent the hooks to
    config = tmp_path / "conf 100%" / "ingestd.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text("")  # named by INGESTD_CONFIG: it must exist
    env = {"HOME": str(tmp_path), "INGESTD_CONFIG": str(config), "INGESTD_PORT": "9100", "INGESTD_STORE": "x"}
    res = CliRunner().invoke(cli, ["service", "install", "--dry-run"], env=env, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert f'Environment="INGESTD_CONFIG={tmp_path}/conf 100%%/ingestd.toml"' in lines
    assert 'Environment="INGESTD_PORT=9100"' in lines
    assert not any("INGESTD_STORE" in x for x in lines)  # not a setting of serve's table
    res = CliRunner().invoke(
        cli, ["service", "install", "--dry-run", "--platform", "darwin"], env={**env, "INGESTD_CONFIG": None}
    )
    plist = plistlib.loads(res.stdout[res.stdout.index("<?xml") :].encode())
    assert plist["EnvironmentVariables"] == {
        "PYTHONUNBUFFERED": "1",
        "XDG_CONFIG_HOME": f"{tmp_path}/.config",  # the default file, optional: not named
        "INGESTD_PORT": "9100",
    }
    bad = CliRunner().invoke(
        cli, ["service", "install", "--dry-run"], env={**env, "INGESTD_HOST": "x\nExecStartPre=/bin/sh"}
    )
    assert bad.exit_code == 2 and "INGESTD_HOST holds a control character ('\\n'" in bad.output


def test_a_non_loopback_host_needs_a_token_file_which_the_unit_names(tmp_path: Path) -> None:
    # Regression: INGESTD_HOST=0.0.0.0 wrote a unit whose `serve` refuses to start (no token), with no warning
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": "", "INGESTD_HOST": "0.0.0.0"}
    bare = CliRunner().invoke(cli, ["service", "install", "--dry-run"], env=env)
    assert bare.exit_code == 2 and bare.stdout == ""
    assert "0.0.0.0" in bare.output and "--token-file PATH" in bare.output
    token = tmp_path / "token 1"
    token.write_text("s3cret-token\n")
    token.chmod(0o600)
    for plat in ("linux", "darwin"):
        res = CliRunner().invoke(
            cli, ["service", "install", "--dry-run", "--platform", plat, "--token-file", str(token)], env=env
        )
        assert res.exit_code == 0, res.output
        assert "s3cret" not in res.output  # the unit names the file, never the token
        if plat == "linux":
            assert f"serve --db {tmp_path}/.local/share/ingestd/ingestd.db --projects" in res.output
            assert f'--token-file "{token}"' in res.output
        else:
            plist = plistlib.loads(res.stdout[res.stdout.index("<?xml") :].encode())
            assert plist["ProgramArguments"][-2:] == ["--token-file", str(token)]
    token.chmod(0o644)  # a token others can read is refused as `serve` refuses it
    loose = CliRunner().invoke(cli, ["service", "install", "--dry-run", "--token-file", str(token)], env=env)
    assert loose.exit_code == 2 and str(token) in loose.output
    # on loopback no token is needed, and one given is still passed on
    token.chmod(0o600)
    local = {**env, "INGESTD_HOST": "127.0.0.1"}
    assert CliRunner().invoke(cli, ["service", "install", "--dry-run"], env=local).exit_code == 0
    res = CliRunner().invoke(cli, ["service", "install", "--dry-run", "--token-file", str(token)], env=local)
    assert res.exit_code == 0 and "--token-file" in res.output


def test_uninstall_reports_each_command_and_removes_the_file_whatever_the_manager_says(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def run(argv: Sequence[str]) -> tuple[int, str]:
        calls.append(list(argv))
        return (5, "Unit ingestd.claude.service not loaded.") if "disable" in argv else (0, "")

    path = tmp_path / "u" / service.UNIT_NAME
    path.parent.mkdir()
    path.write_text("[Unit]\n")
    done = service.uninstall("linux", path, stop=True, run=run)
    assert not path.exists()
    assert done == [
        f"systemctl --user disable --now {service.UNIT_NAME}: exit 5: Unit ingestd.claude.service not loaded.",
        "systemctl --user daemon-reload: ok",
        f"{path}: removed",
    ]
    path.write_text("[Unit]\n")
    calls.clear()
    assert service.uninstall("linux", path, stop=False, run=run) == [f"{path}: removed"]
    assert calls == [] and not path.exists()


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--db", "{tmp}/a\nExecStartPre=/bin/touch /tmp/pwned\n.db"], {}, "the value of --db"),
        (["--projects", "{tmp}/p\rx"], {}, "the value of --projects"),
        ([], {"CLAUDE_CONFIG_DIR": "{tmp}/c\nExecStartPre=/bin/sh"}, "the value of --projects"),
        ([], {"INGESTD_HOST": "x\x1b[2J"}, "INGESTD_HOST"),
        (["--token-file", "{tmp}/t\x7f"], {}, "the value of --token-file"),
    ],
)
@pytest.mark.parametrize("plat", ["linux", "darwin"])
def test_no_control_character_reaches_the_service_file(
    tmp_path: Path, args: list[str], env: dict[str, str], named: str, plat: str
) -> None:
    home = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": ""}
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    more = {k: v.replace("{tmp}", str(tmp_path)) for k, v in env.items()}
    res = CliRunner().invoke(cli, ["service", "install", "--dry-run", "--platform", plat, *argv], env={**home, **more})
    assert res.exit_code == 2, res.output
    assert f"{named} holds a control character" in res.output and "[Service]" not in res.output
